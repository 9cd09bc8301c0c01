// CUDA entry points of the FP32 depthwise ops: validate, pick the kernel path for the shape, launch.
// Paths (stride 1, C % 4 == 0, 16-byte aligned): the row-sliding kernel up to 3x3, the TMA-fed CUDA-core kernel at
// 5x5, the GEMV kernel for the rest; direct kernels otherwise. CNN_DWCONV_VERBOSE=1 logs the path chosen for each
// new (op, shape) on stderr, so no slow path is ever taken silently.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>

#include "core/cuda_check.h"
#include "kernels/dwconv/dwconv_bfc_cuda.h"
#include "kernels/dwconv/dwconv_cuda.h"
#include "kernels/dwconv/dwconv_cuda_internal.h"

namespace cnn::dwconv {

namespace {

bool gemv_applies(const DwconvParams& p) { return p.stride_h == 1 && p.stride_w == 1 && p.c % 4 == 0; }

// CNN_DWCONV_F32_PATH = auto | gemv | vs | tma forces the stride-1 forward-style kernel where it can run (A/B
// benchmarks); vs or tma on a shape it cannot run is an error, never a silent fallback.
const std::string& forced_f32_path() {
  static const std::string value = env_choice("CNN_DWCONV_F32_PATH", {"auto", "gemv", "vs", "tma"});
  return value;
}

// Filters up to kVslideMaxF x kVslideMaxF (3x3) take the row-sliding kernel (each input row loaded once per thread
// for the FH output rows it feeds: 0.609 vs 0.653 ms at 3x3 on H200), larger ones the GEMV kernel (it won at 5x5).
// Callers have checked stride 1, C % 4 == 0 and the pointers' alignment, so only the filter size can fail here.
bool use_vslide(const ConvGeometry& g) {
  const bool fits = vslide_f32_supports(g, nullptr, nullptr, nullptr, nullptr);
  const std::string& forced = forced_f32_path();
  if (forced == "vs") {
    CNN_CHECK(fits, "CNN_DWCONV_F32_PATH=vs: FH and FW must be <= ", kVslideMaxF, ", got ", g.fh, "x", g.fw);
    return true;
  }
  return forced == "auto" && fits;
}

// CNN_DWCONV_F32_GEMV = TM[,ring][,whole] forces the GEMV kernel's configuration on every shape it runs (A/B of
// gemv_config_for's table); a whole filter too large for shared memory is the launcher's error.
GemvConfig gemv_config(const ConvGeometry& g) {
  static const std::optional<GemvConfig> forced = env_override("CNN_DWCONV_F32_GEMV", parse_gemv_config);
  return forced ? *forced : gemv_config_for(g);
}

// The TMA-fed CUDA-core kernel where it was measured faster than the GEMV kernel (5x5: tma_cc_default_for), or
// where CNN_DWCONV_F32_PATH=tma forces it.
bool use_tma(const ConvGeometry& g) {
  const std::string& forced = forced_f32_path();
  if (forced == "auto") return tma_cc_default_for(g, false);
  if (forced != "tma") return false;
  tma_cc_check_forced(g, false);
  return true;
}

std::string forward_style_path(const char* op, const ConvGeometry& g) {
  if (use_tma(g)) return tma_cc_f32_describe(g, tma_cc_config(g, false));
  if (use_vslide(g)) return str_cat(op, " cuda-core vslide F=", g.fh, "x", g.fw, " TM=4 rows=16");
  return dwconv_gemv_path_name(g, gemv_config(g));
}

void run_forward_style(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                       cudaStream_t stream) {
  if (use_tma(g))
    launch_dwconv_tma_cc_f32(src, w, bias, dst, g, tma_cc_config(g, false), stream);
  else if (use_vslide(g))
    launch_dwconv_vslide_f32(src, w, bias, dst, g, stream);
  else
    launch_dwconv_gemv(src, w, bias, dst, g, gemv_config(g), stream);
}

std::string forward_path(const DwconvParams& p, bool aligned) {
  if (gemv_applies(p) && aligned) return forward_style_path("fwd", forward_geometry(p));
  return str_cat("fwd direct vec=", (p.c % 4 == 0 && aligned) ? 4 : 1,
                 gemv_applies(p) ? " (unaligned pointers)" : (p.c % 4 ? " (C % 4 != 0)" : " (stride > 1)"));
}

std::string backward_data_path(const DwconvParams& p, bool aligned) {
  if (gemv_applies(p) && aligned) return forward_style_path("bdc", backward_data_geometry_stride1(p));
  const int vec = (p.c % 4 == 0 && aligned) ? 4 : 1;
  if (p.stride_h == 1 && p.stride_w == 1) return str_cat("bdc direct flipped vec=", vec);
  return str_cat("bdc direct strided gather vec=", vec);
}

}  // namespace

bool dwconv_verbose() {
  static const bool on = [] {
    const char* v = std::getenv("CNN_DWCONV_VERBOSE");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return on;
}

GemvConfig parse_gemv_config(const std::string& text, const char* what) {
  GemvConfig cfg;
  bool ok = true;
  size_t start = 0;
  for (int item = 0; ok; ++item) {
    const size_t end = text.find(',', start);
    const std::string tok = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (item == 0) {
      ok = tok == "8" || tok == "16";
      if (ok) cfg.tm = tok == "8" ? 8 : 16;
    } else if (tok == "ring" && !cfg.prefetch) {
      cfg.prefetch = true;
    } else if (tok == "whole" && !cfg.whole_filter) {
      cfg.whole_filter = true;
    } else {
      ok = false;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  CNN_CHECK(ok, what, ": expected TM[,ring][,whole] with TM 8 or 16 (e.g. 16,ring,whole), got '", text, "'");
  return cfg;
}

DeviceShapeKey device_shape_key(const DwconvParams& p) {
  int device = 0;
  CNN_CUDA_CHECK(cudaGetDevice(&device));
  return {device,     p.n,        p.ih,      p.iw,         p.c,        p.fh,       p.fw,
          p.stride_h, p.stride_w, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right};
}

std::string env_choice(const char* var, std::initializer_list<const char*> allowed) {
  const char* v = std::getenv(var);
  const std::string s = v ? v : "auto";
  std::string list;  // "a, b or c"
  size_t i = 0;
  for (const char* a : allowed) {
    if (s == a) return s;
    if (i > 0) list += i + 1 == allowed.size() ? " or " : ", ";
    list += a;
    ++i;
  }
  throw Error(str_cat(var, ": expected ", list, ", got '", s, "'"));
}

void log_path_line(const char* op, const DwconvParams& p, const std::string& path) {
  static std::mutex mu;
  static std::set<std::string> seen;
  const std::string key = str_cat(op, " ", p.str(), " -> ", path);
  std::lock_guard<std::mutex> lock(mu);
  if (seen.insert(key).second) std::fprintf(stderr, "dwconv: %s\n", key.c_str());
}

ConvGeometry forward_geometry(const DwconvParams& p) {
  ConvGeometry g;
  g.n = p.n, g.in_h = p.ih, g.in_w = p.iw, g.c = p.c;
  g.out_h = p.oh(), g.out_w = p.ow();
  g.fh = p.fh, g.fw = p.fw;
  g.stride_h = p.stride_h, g.stride_w = p.stride_w;
  g.pad_t = p.pad_top, g.pad_l = p.pad_left;
  g.flip = false;
  return g;
}

ConvGeometry backward_data_geometry_stride1(const DwconvParams& p) {
  ConvGeometry g;
  g.n = p.n, g.in_h = p.oh(), g.in_w = p.ow(), g.c = p.c;
  g.out_h = p.ih, g.out_w = p.iw;
  g.fh = p.fh, g.fw = p.fw;
  g.pad_t = p.fh - 1 - p.pad_top, g.pad_l = p.fw - 1 - p.pad_left;  // negative: crop
  g.flip = true;
  return g;
}

void dwconv_forward_cuda(const float* x, const float* w, const float* bias, float* y, const DwconvParams& p,
                         cudaStream_t stream) {
  p.validate("dwconv_forward_cuda");
  check_pointers("dwconv_forward_cuda", x, "x", w, "w", y, "y");
  const bool aligned = aligned16(x) && aligned16(w) && aligned16(bias) && aligned16(y);
  log_path_once("fwd", p, [&] { return forward_path(p, aligned); });
  const ConvGeometry g = forward_geometry(p);
  if (gemv_applies(p) && aligned)
    run_forward_style(x, w, bias, y, g, stream);
  else
    launch_dwconv_direct_forward(x, w, bias, y, g, p.c % 4 == 0 && aligned, stream);
}

void dwconv_backward_data_cuda(const float* dy, const float* w, float* dx, const DwconvParams& p,
                               cudaStream_t stream) {
  p.validate("dwconv_backward_data_cuda");
  check_pointers("dwconv_backward_data_cuda", dy, "dy", w, "w", dx, "dx");
  const bool aligned = aligned16(dy) && aligned16(w) && aligned16(dx);
  log_path_once("bdc", p, [&] { return backward_data_path(p, aligned); });
  const bool vec4 = p.c % 4 == 0 && aligned;
  if (p.stride_h == 1 && p.stride_w == 1) {
    const ConvGeometry g = backward_data_geometry_stride1(p);
    if (gemv_applies(p) && aligned)
      run_forward_style(dy, w, nullptr, dx, g, stream);
    else
      launch_dwconv_direct_forward(dy, w, nullptr, dx, g, vec4, stream);
  } else {
    launch_dwconv_direct_backward_data(dy, w, dx, p, vec4, stream);
  }
}

std::string dwconv_path_name(DwconvOp op, const DwconvParams& p) {
  p.validate("dwconv_path_name");
  switch (op) {
    case DwconvOp::forward: return forward_path(p, true);
    case DwconvOp::backward_data: return backward_data_path(p, true);
    case DwconvOp::backward_filter: return bfc_path_name(p);
  }
  return "unknown";
}

}  // namespace cnn::dwconv
