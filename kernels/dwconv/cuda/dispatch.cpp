// CUDA entry points of the depthwise ops (dwconv_cuda.h), FP32 and FP16: validate, ask select() for the plan, launch
// it (on channel-padded copies in the caller's scratch when the plan pads). The switches below are the only place
// that maps a plan's kernel to its launcher.
#include <type_traits>

#include "core/cuda_check.h"
#include "kernels/common/channel_pad.h"
#include "kernels/dwconv/cuda/select.h"

namespace cnn::dwconv {

namespace {

template <class T>
constexpr DType kDType = std::is_same_v<T, float> ? DType::f32 : DType::f16;

[[noreturn]] void not_for(const Plan& plan, const char* what) {
  throw Error(str_cat("dwconv: plan ", kernel_name(plan.kernel), " is not ", what));
}

// Forward-style plans: forward, and stride-1 backward-data on the flipped geometry.
void run_forward_style(const float* src, const float* w, const float* bias, float* dst, const Plan& plan,
                       cudaStream_t stream) {
  switch (plan.kernel) {
    case Kernel::fwd_tma_cc: return launch_dwconv_tma_cc_f32(src, w, bias, dst, plan.g, plan.tma, stream);
    case Kernel::fwd_vslide: return launch_dwconv_vslide_f32(src, w, bias, dst, plan.g, stream);
    case Kernel::fwd_gemv: return launch_dwconv_gemv(src, w, bias, dst, plan.g, plan.gemv, stream);
    case Kernel::direct: return launch_dwconv_direct_forward(src, w, bias, dst, plan.g, plan.vec, stream);
    case Kernel::direct_tile:
      return launch_dwconv_direct_tile(src, w, bias, dst, plan.g, plan.tile_lane_channels, plan.tile_w, stream);
    default: not_for(plan, "an FP32 forward-style kernel");
  }
}

void run_forward_style(const __half* src, const __half* w, const __half* bias, __half* dst, const Plan& plan,
                       cudaStream_t stream) {
  switch (plan.kernel) {
    case Kernel::fwd_tc: return launch_dwconv_tc_f16(src, w, bias, dst, plan.g, plan.tc_theta, stream);
    case Kernel::fwd_tc_ring:
      return launch_dwconv_tc_ring_f16(src, w, bias, dst, plan.g, plan.ring_q, plan.ring_mma, plan.ring_transposed,
                                       stream);
    case Kernel::fwd_cc_f16: return launch_dwconv_cc_f16(src, w, bias, dst, plan.g, plan.cc_groups, stream);
    case Kernel::fwd_tma_cc: return launch_dwconv_tma_cc_f16(src, w, bias, dst, plan.g, plan.tma, stream);
    case Kernel::direct: return launch_dwconv_direct_f16_forward(src, w, bias, dst, plan.g, plan.vec, stream);
    case Kernel::direct_tile:
      return launch_dwconv_direct_tile_f16(src, w, bias, dst, plan.g, plan.tile_lane_channels, plan.tile_w, stream);
    default: not_for(plan, "an FP16 forward-style kernel");
  }
}

void run_strided_backward_data(const float* dy, const float* w, float* dx, const DwconvParams& p, const Plan& plan,
                               cudaStream_t stream) {
  launch_dwconv_direct_backward_data(dy, w, dx, p, plan.vec, stream);
}
void run_strided_backward_data(const __half* dy, const __half* w, __half* dx, const DwconvParams& p,
                               const Plan& plan, cudaStream_t stream) {
  launch_dwconv_direct_f16_backward_data(dy, w, dx, p, plan.vec, stream);
}

void run_backward_filter(const float* x, const float* dy, float* dw, const DwconvParams& p, BfcAccum,
                         const Plan& plan, cudaStream_t stream) {
  switch (plan.kernel) {
    case Kernel::bfc_tile: return dwconv_backward_filter_cuda_tile(x, dy, dw, p, plan.bfc, stream);
    case Kernel::bfc_small: return launch_dwconv_bfc_small(x, dy, dw, p, BfcSmallForce{}, stream);
    case Kernel::bfc_span:
      return launch_dwconv_bfc_span(x, dy, dw, p, stream);
    default: not_for(plan, "an FP32 backward-filter kernel");
  }
}
void run_backward_filter(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                         const Plan& plan, cudaStream_t stream) {
  switch (plan.kernel) {
    case Kernel::bfc_tile: return dwconv_backward_filter_cuda_tile_f16(x, dy, dw, p, accum, plan.bfc, stream);
    case Kernel::bfc_strip_f16: return launch_dwconv_bfc_f16_tiled(x, dy, dw, p, accum, BfcF16TiledForce{}, stream);
    case Kernel::bfc_rowwarp_f16: return launch_dwconv_bfc_f16(x, dy, dw, p, accum, BfcF16Force{}, stream);
    case Kernel::bfc_small:
      CNN_CHECK(accum == BfcAccum::fp32, "dwconv: plan bfc_small accumulates in FP32, got ", bfc_accum_name(accum));
      return launch_dwconv_bfc_small_f16(x, dy, dw, p, BfcSmallForce{}, stream);
    case Kernel::bfc_span:
      CNN_CHECK(accum == BfcAccum::fp32, "dwconv: plan bfc_span accumulates in FP32, got ", bfc_accum_name(accum));
      return launch_dwconv_bfc_span_f16(x, dy, dw, p, stream);
    case Kernel::bfc_tc:
      CNN_CHECK(accum == BfcAccum::fp32, "dwconv: plan bfc_tc accumulates in FP32, got ", bfc_accum_name(accum));
      return launch_dwconv_bfc_tc_f16(x, dy, dw, p, stream);
    default: not_for(plan, "an FP16 backward-filter kernel");
  }
}

// ---- Padded plans: pad the inputs' channels into scratch, run the plan there, copy the output's channels back.

// Offsets of consecutive 256-byte-aligned pieces of one scratch buffer.
struct ScratchLayout {
  size_t total = 0;
  size_t add(size_t bytes) {
    const size_t at = total;
    total += (bytes + 255) / 256 * 256;
    return at;
  }
};

char* scratch_base(const DwconvScratch& scratch, size_t bytes, const char* name) {
  CNN_CHECK(scratch, name, ": this channel count runs on padded copies and needs scratch memory (DwconvScratch)");
  char* base = static_cast<char*>(scratch(bytes));
  CNN_CHECK(base != nullptr && aligned16(base), name, ": the scratch for padded channels is null or not 16-byte aligned");
  return base;
}

template <class T>
size_t bytes_of(int64_t elems) {
  return size_t(elems) * sizeof(T);
}

// A padded forward-style plan's kernel on padded inputs (plan.padded_c channels), output dst: padded too, or with C
// channels where the plan writes_unpadded.
void run_forward_style_on_padded(const float* src_p, const float* w_p, const float* bias_p, float* dst, int c,
                                 const Plan& plan, cudaStream_t stream) {
  if (!plan.writes_unpadded) return run_forward_style(src_p, w_p, bias_p, dst, plan, stream);
  ConvGeometry g = plan.g;
  g.c = c;
  launch_dwconv_gemv(src_p, w_p, bias_p, dst, g, plan.gemv, stream, plan.padded_c);
}
void run_forward_style_on_padded(const __half* src_p, const __half* w_p, const __half* bias_p, __half* dst, int c,
                                 const Plan& plan, cudaStream_t stream) {
  if (!plan.writes_unpadded) return run_forward_style(src_p, w_p, bias_p, dst, plan, stream);
  ConvGeometry g = plan.g;
  g.c = c;
  launch_dwconv_tc_ring_f16(src_p, w_p, bias_p, dst, g, plan.ring_q, plan.ring_mma, plan.ring_transposed, stream,
                            plan.padded_c);
}

// A forward-style plan (forward: src X -> dst Y; stride-1 backward-data: dY -> dX) on padded channels.
template <class T>
void run_forward_style_padded(const T* src, int64_t src_rows, const T* w, const T* bias, T* dst, int64_t dst_rows,
                              const DwconvParams& p, const Plan& plan, cudaStream_t stream,
                              const DwconvScratch& scratch, const char* name) {
  const int c = p.c, cp = plan.padded_c;
  const int64_t taps = int64_t(p.fh) * p.fw;
  const bool crop = !plan.writes_unpadded;
  ScratchLayout l;
  const size_t o_src = l.add(bytes_of<T>(src_rows * cp)), o_dst = l.add(crop ? bytes_of<T>(dst_rows * cp) : 0),
               o_w = l.add(bytes_of<T>(taps * cp)), o_bias = l.add(bias ? bytes_of<T>(cp) : 0);
  char* base = scratch_base(scratch, l.total, name);
  T* src_p = reinterpret_cast<T*>(base + o_src);
  T* dst_p = crop ? reinterpret_cast<T*>(base + o_dst) : dst;
  T* w_p = reinterpret_cast<T*>(base + o_w);
  T* bias_p = bias ? reinterpret_cast<T*>(base + o_bias) : nullptr;
  kernels::launch_pad_channels<T>(
      {{src, src_p, src_rows, c, cp}, {w, w_p, taps, c, cp}, {bias, bias_p, bias ? 1 : 0, c, cp}}, stream);
  run_forward_style_on_padded(src_p, w_p, bias_p, dst_p, c, plan, stream);
  if (crop) kernels::launch_crop_channels(dst_p, dst, dst_rows, cp, c, stream);
}

template <class T>
void run_backward_filter_padded(const T* x, const T* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                                const Plan& plan, cudaStream_t stream, const DwconvScratch& scratch,
                                const char* name) {
  DwconvParams q = p;
  q.c = plan.padded_c;
  const int64_t x_rows = int64_t(p.n) * p.ih * p.iw, dy_rows = int64_t(p.n) * p.oh() * p.ow(),
                taps = int64_t(p.fh) * p.fw;
  ScratchLayout l;
  const size_t o_x = l.add(bytes_of<T>(x_rows * q.c)), o_dy = l.add(bytes_of<T>(dy_rows * q.c)),
               o_dw = l.add(bytes_of<float>(taps * q.c));
  char* base = scratch_base(scratch, l.total, name);
  T* x_p = reinterpret_cast<T*>(base + o_x);
  T* dy_p = reinterpret_cast<T*>(base + o_dy);
  float* dw_p = reinterpret_cast<float*>(base + o_dw);
  kernels::launch_pad_channels<T>({{x, x_p, x_rows, p.c, q.c}, {dy, dy_p, dy_rows, p.c, q.c}}, stream);
  run_backward_filter(x_p, dy_p, dw_p, q, accum, plan, stream);
  kernels::launch_crop_channels(dw_p, dw, taps, q.c, p.c, stream);
}

// The plan for op, after the entry point's checks, logged when the verbose override is on.
Plan plan_for(DwconvOp op, DType dtype, const char* name, const DwconvParams& p, BfcAccum accum, const void* a,
              const char* a_name, const void* b, const char* b_name, const void* bias, void* out,
              const char* out_name) {
  p.validate(name);
  check_pointers(name, a, a_name, b, b_name, out, out_name);
  const int align = op == DwconvOp::backward_filter ? alignment_of({a, b}) : alignment_of({a, b, bias, out});
  const Plan plan = select(op, dtype, p, accum, align, overrides());
  log_plan(op, dtype, p, accum, plan);
  return plan;
}

template <class T>
const char* entry_name(const char* f32, const char* f16) {
  return kDType<T> == DType::f32 ? f32 : f16;
}

int64_t x_rows(const DwconvParams& p) { return int64_t(p.n) * p.ih * p.iw; }
int64_t y_rows(const DwconvParams& p) { return int64_t(p.n) * p.oh() * p.ow(); }

template <class T>
void forward(const T* x, const T* w, const T* bias, T* y, const DwconvParams& p, cudaStream_t stream,
             const DwconvScratch& scratch) {
  const char* name = entry_name<T>("dwconv_forward_cuda", "dwconv_forward_cuda(f16)");
  const Plan plan = plan_for(DwconvOp::forward, kDType<T>, name, p, BfcAccum::fp32, x, "x", w, "w", bias, y, "y");
  if (plan.padded_c > 0)
    run_forward_style_padded(x, x_rows(p), w, bias, y, y_rows(p), p, plan, stream, scratch, name);
  else
    run_forward_style(x, w, bias, y, plan, stream);
}

// Backward-data on its plan (the entry's, or dwconv_backward_cuda's).
template <class T>
void run_backward_data_plan(const T* dy, const T* w, T* dx, const DwconvParams& p, const Plan& plan,
                            cudaStream_t stream, const DwconvScratch& scratch, const char* name) {
  if (p.stride_h != 1 || p.stride_w != 1)
    run_strided_backward_data(dy, w, dx, p, plan, stream);
  else if (plan.padded_c > 0)
    run_forward_style_padded(dy, y_rows(p), w, static_cast<const T*>(nullptr), dx, x_rows(p), p, plan, stream,
                             scratch, name);
  else
    run_forward_style(dy, w, nullptr, dx, plan, stream);
}

template <class T>
void backward_data(const T* dy, const T* w, T* dx, const DwconvParams& p, cudaStream_t stream,
                   const DwconvScratch& scratch) {
  const char* name = entry_name<T>("dwconv_backward_data_cuda", "dwconv_backward_data_cuda(f16)");
  const Plan plan =
      plan_for(DwconvOp::backward_data, kDType<T>, name, p, BfcAccum::fp32, dy, "dy", w, "w", nullptr, dx, "dx");
  run_backward_data_plan(dy, w, dx, p, plan, stream, scratch, name);
}

// Backward-filter on its plan (the entry's, or dwconv_backward_cuda's).
template <class T>
void run_backward_filter_plan(const T* x, const T* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                              const Plan& plan, cudaStream_t stream, const DwconvScratch& scratch, const char* name) {
  if (plan.padded_c > 0)
    run_backward_filter_padded(x, dy, dw, p, accum, plan, stream, scratch, name);
  else
    run_backward_filter(x, dy, dw, p, accum, plan, stream);
}

template <class T>
void backward_filter(const T* x, const T* dy, float* dw, const DwconvParams& p, BfcAccum accum, cudaStream_t stream,
                     const DwconvScratch& scratch) {
  const char* name = entry_name<T>("dwconv_backward_filter_cuda", "dwconv_backward_filter_cuda(f16)");
  const Plan plan =
      plan_for(DwconvOp::backward_filter, kDType<T>, name, p, accum, x, "x", dy, "dy", nullptr, dw, "dw");
  run_backward_filter_plan(x, dy, dw, p, accum, plan, stream, scratch, name);
}

// Both backward ops of one convolution. Where both plans pad to the same width (stride 1), dY is padded once: pad
// dY and W, backward-data, crop dX (or write it unpadded: Plan::writes_unpadded); pad X into dX's padded space (the
// crop has read it: same stream), backward-filter, crop dW. Otherwise each op runs on its plan as its entry would
// (planned once here).
template <class T>
void backward(const T* x, const T* dy, const T* w, T* dx, float* dw, const DwconvParams& p, BfcAccum accum,
              cudaStream_t stream, const DwconvScratch& scratch) {
  const char* name = entry_name<T>("dwconv_backward_cuda", "dwconv_backward_cuda(f16)");
  const Plan bdc =
      plan_for(DwconvOp::backward_data, kDType<T>, name, p, BfcAccum::fp32, dy, "dy", w, "w", nullptr, dx, "dx");
  const Plan bfc = plan_for(DwconvOp::backward_filter, kDType<T>, name, p, accum, x, "x", dy, "dy", nullptr, dw, "dw");
  const bool stride_1 = p.stride_h == 1 && p.stride_w == 1;
  if (!stride_1 || bdc.padded_c == 0 || bdc.padded_c != bfc.padded_c) {
    run_backward_data_plan(dy, w, dx, p, bdc, stream, scratch, name);
    run_backward_filter_plan(x, dy, dw, p, accum, bfc, stream, scratch, name);
    return;
  }
  DwconvParams q = p;
  q.c = bdc.padded_c;
  const int64_t taps = int64_t(p.fh) * p.fw;
  ScratchLayout l;
  const size_t o_dy = l.add(bytes_of<T>(y_rows(p) * q.c)), o_x = l.add(bytes_of<T>(x_rows(p) * q.c)),
               o_w = l.add(bytes_of<T>(taps * q.c)), o_dw = l.add(bytes_of<float>(taps * q.c));
  char* base = scratch_base(scratch, l.total, name);
  T* dy_p = reinterpret_cast<T*>(base + o_dy);
  T* x_p = reinterpret_cast<T*>(base + o_x);  // dX's padded copy first, then X's
  T* w_p = reinterpret_cast<T*>(base + o_w);
  float* dw_p = reinterpret_cast<float*>(base + o_dw);
  kernels::launch_pad_channels<T>({{dy, dy_p, y_rows(p), p.c, q.c}, {w, w_p, taps, p.c, q.c}}, stream);
  const bool crop_dx = !bdc.writes_unpadded;
  run_forward_style_on_padded(dy_p, w_p, static_cast<const T*>(nullptr), crop_dx ? x_p : dx, p.c, bdc, stream);
  if (crop_dx) kernels::launch_crop_channels(x_p, dx, x_rows(p), q.c, p.c, stream);
  kernels::launch_pad_channels(x, x_p, x_rows(p), p.c, q.c, stream);
  run_backward_filter(x_p, dy_p, dw_p, q, accum, bfc, stream);
  kernels::launch_crop_channels(dw_p, dw, taps, q.c, p.c, stream);
}

}  // namespace

void dwconv_backward_cuda(const float* x, const float* dy, const float* w, float* dx, float* dw, const DwconvParams& p,
                          cudaStream_t stream, const DwconvScratch& scratch) {
  backward(x, dy, w, dx, dw, p, BfcAccum::fp32, stream, scratch);
}
void dwconv_backward_cuda(const __half* x, const __half* dy, const __half* w, __half* dx, float* dw,
                          const DwconvParams& p, BfcAccum accum, cudaStream_t stream, const DwconvScratch& scratch) {
  backward(x, dy, w, dx, dw, p, accum, stream, scratch);
}

void dwconv_forward_cuda(const float* x, const float* w, const float* bias, float* y, const DwconvParams& p,
                         cudaStream_t stream, const DwconvScratch& scratch) {
  forward(x, w, bias, y, p, stream, scratch);
}
void dwconv_backward_data_cuda(const float* dy, const float* w, float* dx, const DwconvParams& p,
                               cudaStream_t stream, const DwconvScratch& scratch) {
  backward_data(dy, w, dx, p, stream, scratch);
}
void dwconv_backward_filter_cuda(const float* x, const float* dy, float* dw, const DwconvParams& p,
                                 cudaStream_t stream, const DwconvScratch& scratch) {
  backward_filter(x, dy, dw, p, BfcAccum::fp32, stream, scratch);
}

void dwconv_forward_cuda(const __half* x, const __half* w, const __half* bias, __half* y, const DwconvParams& p,
                         cudaStream_t stream, const DwconvScratch& scratch) {
  forward(x, w, bias, y, p, stream, scratch);
}
void dwconv_backward_data_cuda(const __half* dy, const __half* w, __half* dx, const DwconvParams& p,
                               cudaStream_t stream, const DwconvScratch& scratch) {
  backward_data(dy, w, dx, p, stream, scratch);
}
void dwconv_backward_filter_cuda(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                                 cudaStream_t stream, const DwconvScratch& scratch) {
  backward_filter(x, dy, dw, p, accum, stream, scratch);
}

}  // namespace cnn::dwconv
