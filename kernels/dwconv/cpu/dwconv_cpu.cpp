// FP32 CPU backend of depthwise conv (NHWC, FP32 accumulation): validation, OpenMP work split and the reduction of
// every op to the row kernels in cpu/kernels.h. Forward and backward-data are correlations (backward-data
// as s_h*s_w stride-1 phases over dY with flipped sub-filters); backward-filter accumulates per channel block.
// Oracle: ref/reference.cpp.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/cpu/impl.h"

namespace cnn::dwconv {

namespace cpu {

namespace {

// Below this many multiply-adds a call runs on the calling thread: a parallel region costs more than the work.
constexpr double kSerialMacs = 1 << 16;
// Per-thread partial dW buffers of backward-filter may take at most this many floats in total.
constexpr int64_t kMaxPartialFloats = int64_t(1) << 24;

// Splits rows [0, rows) into contiguous chunks, one parallel task each.
template <class F>
void parallel_rows(int64_t rows, double macs, F&& body) {
  const int threads = macs < kSerialMacs ? 1 : omp_get_max_threads();
  const int64_t chunks = std::min<int64_t>(rows, int64_t(threads) * 4);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int64_t k = 0; k < chunks; ++k) body(rows * k / chunks, rows * (k + 1) / chunks);
}

// Scratch of one task: the packed-row ring of cpu/impl.h.
class RingStorage {
 public:
  RingStorage(int slots, const RowLayout& lay)
      : rows_(ring_floats(slots, lay)), keys_(size_t(slots)), taps_(size_t(slots)) {
    ring_.rows = rows_.data(), ring_.keys = keys_.data(), ring_.row_of_tap = taps_.data(), ring_.slots = slots;
  }
  RowRing ring() const { return ring_; }

 private:
  AlignedFloats rows_;
  std::vector<int64_t> keys_;
  std::vector<const float*> taps_;
  RowRing ring_;
};

void correlate_rows(Isa isa, const CorrPlan& pl, int64_t b, int64_t e) {
  const RingStorage storage(std::max(pl.fh, 1) + pl.sh, row_layout(pl.sw, pl.pw, pl.out_w, pl.fw));
  switch (isa) {
    case Isa::avx512: return avx512::correlate_rows(pl, storage.ring(), b, e);
    case Isa::avx2: return avx2::correlate_rows(pl, storage.ring(), b, e);
    case Isa::generic: return generic::correlate_rows(pl, storage.ring(), b, e);
  }
}

void bfc_rows(Isa isa, const BfcPlan& pl, float* dw, int64_t b, int64_t e, int c_begin, int c_end) {
  const DwconvParams& p = pl.p;
  const RingStorage storage(p.fh, row_layout(p.stride_w, p.pad_left, p.ow(), p.fw));
  switch (isa) {
    case Isa::avx512: return avx512::bfc_rows(pl, storage.ring(), dw, b, e, c_begin, c_end);
    case Isa::avx2: return avx2::bfc_rows(pl, storage.ring(), dw, b, e, c_begin, c_end);
    case Isa::generic: return generic::bfc_rows(pl, storage.ring(), dw, b, e, c_begin, c_end);
  }
}

void run_correlate(Isa isa, const CorrPlan& pl) {
  const int64_t rows = int64_t(pl.n) * pl.out_h;
  const double macs = double(rows) * pl.out_w * pl.c * std::max(1, pl.fh * pl.fw);
  parallel_rows(rows, macs, [&](int64_t b, int64_t e) { correlate_rows(isa, pl, b, e); });
}

// Reorders f (fh, fw, C) into the per-channel-block layout of CorrPlan::f: each block's taps are contiguous, so
// the row kernels read the filter at unit stride instead of a C-float pitch that maps every tap to the same
// few L1 sets. `tap(i, j)` returns the (fh, fw, C)-layout pointer of tap (i, j) (the flip and phase selection
// of backward-data happen here).
template <class Tap>
void pack_filter(int fh, int fw, int c, Tap&& tap, AlignedFloats& packed) {
  packed.resize(int64_t(fh) * fw * c);
  for (int c0 = 0, l = 0; c0 < c; c0 += l) {
    l = channel_block(c0, c);
    float* dst = packed.data() + int64_t(c0) * fh * fw;
    for (int i = 0; i < fh; ++i)
      for (int j = 0; j < fw; ++j, dst += l) std::copy(tap(i, j) + c0, tap(i, j) + c0 + l, dst);
  }
}

// Backward-data, one phase per (row residue, column residue) of dX modulo the stride. Along one axis, dX rows
// h = s*m + r only meet filter rows i = a (mod s) with a = (r + pad) mod s, and then
//   dX[s*m + r] = sum_{k<K} dY[m + q - k] * W[a + s*k],  K = #{i < F : i = a mod s},  q = (r + pad - a) / s,
// a stride-1 correlation of dY with the flipped sub-filter and padding K - 1 - q (negative: a crop).
// Stride 1 is the single phase r = 0: the 180-degree flipped filter with padding F - 1 - pad.
struct PhaseAxis {
  int a = 0, k = 0, pad = 0, out = 0;  // first filter tap, taps, correlation padding, dX rows in this phase
};

PhaseAxis phase_axis(int r, int pad, int f, int s, int in_extent) {
  PhaseAxis ax;
  ax.a = (r + pad) % s;
  ax.k = ax.a < f ? (f - ax.a + s - 1) / s : 0;
  ax.pad = ax.k - 1 - (r + pad - ax.a) / s;
  ax.out = (in_extent - r + s - 1) / s;
  return ax;
}

}  // namespace

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && isa_supported(Isa::avx2);
    case Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::generic: return true;
  }
  return false;
}

Isa best_isa() {
  static const Isa isa = isa_supported(Isa::avx512) ? Isa::avx512
                         : isa_supported(Isa::avx2) ? Isa::avx2
                                                    : Isa::generic;
  return isa;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2+fma";
    case Isa::generic: return "generic";
  }
  return "?";
}

void forward(Isa isa, const float* x, const float* w, const float* bias, float* y, const DwconvParams& p) {
  p.validate("dwconv_forward_cpu");
  CNN_CHECK(isa_supported(isa), "dwconv_forward_cpu: this CPU cannot run the ", isa_name(isa), " build");
  check_pointers("dwconv_forward_cpu", x, "x", w, "w", y, "y");
  AlignedFloats packed;
  pack_filter(p.fh, p.fw, p.c, [&](int i, int j) { return w + (int64_t(i) * p.fw + j) * p.c; }, packed);
  CorrPlan pl;
  pl.in = x, pl.in_h = p.ih, pl.in_w = p.iw;
  pl.f = packed.data(), pl.fh = p.fh, pl.fw = p.fw, pl.bias = bias;
  pl.sh = p.stride_h, pl.sw = p.stride_w, pl.ph = p.pad_top, pl.pw = p.pad_left;
  pl.out = y, pl.out_h = p.oh(), pl.out_w = p.ow();
  pl.out_col = p.c, pl.out_row = int64_t(pl.out_w) * p.c, pl.out_img = int64_t(pl.out_h) * pl.out_row;
  pl.n = p.n, pl.c = p.c;
  run_correlate(isa, pl);
}

void backward_data(Isa isa, const float* dy, const float* w, float* dx, const DwconvParams& p) {
  p.validate("dwconv_backward_data_cpu");
  CNN_CHECK(isa_supported(isa), "dwconv_backward_data_cpu: this CPU cannot run the ", isa_name(isa), " build");
  check_pointers("dwconv_backward_data_cpu", dy, "dy", w, "w", dx, "dx");
  const int sh = p.stride_h, sw = p.stride_w, c = p.c;
  AlignedFloats sub;  // flipped sub-filter of the current phase, (K_h, K_w, C) packed
  for (int rh = 0; rh < std::min(sh, p.ih); ++rh) {
    const PhaseAxis ah = phase_axis(rh, p.pad_top, p.fh, sh, p.ih);
    for (int rw = 0; rw < std::min(sw, p.iw); ++rw) {
      const PhaseAxis aw = phase_axis(rw, p.pad_left, p.fw, sw, p.iw);
      pack_filter(ah.k, aw.k, c, [&](int i, int j) {
        return w + (int64_t(ah.a + sh * (ah.k - 1 - i)) * p.fw + aw.a + sw * (aw.k - 1 - j)) * c;
      }, sub);
      CorrPlan pl;
      pl.in = dy, pl.in_h = p.oh(), pl.in_w = p.ow();
      pl.f = sub.data(), pl.fh = ah.k, pl.fw = aw.k;
      pl.sh = 1, pl.sw = 1, pl.ph = ah.pad, pl.pw = aw.pad;
      pl.out = dx + (int64_t(rh) * p.iw + rw) * c, pl.out_h = ah.out, pl.out_w = aw.out;
      pl.out_col = int64_t(sw) * c, pl.out_row = int64_t(sh) * p.iw * c, pl.out_img = int64_t(p.ih) * p.iw * c;
      pl.n = p.n, pl.c = c;
      run_correlate(isa, pl);
    }
  }
}

void backward_filter(Isa isa, const float* x, const float* dy, float* dw, const DwconvParams& p) {
  p.validate("dwconv_backward_filter_cpu");
  CNN_CHECK(isa_supported(isa), "dwconv_backward_filter_cpu: this CPU cannot run the ", isa_name(isa), " build");
  check_pointers("dwconv_backward_filter_cpu", x, "x", dy, "dy", dw, "dw");
  BfcPlan pl;
  pl.x = x, pl.dy = dy, pl.p = p;
  // Channel units (16-channel blocks, then the 8-block and the scalar tail) x Z chunks of the (n, oh) rows. A task
  // owns one unit of one chunk; chunk z > 0 accumulates into its own partial dW, summed into dw at the end.
  std::vector<int> unit_begin;
  for (int c0 = 0; c0 < p.c; c0 += channel_block(c0, p.c) == 1 ? p.c - c0 : channel_block(c0, p.c))
    unit_begin.push_back(c0);
  unit_begin.push_back(p.c);
  const int units = int(unit_begin.size()) - 1;
  const int64_t rows = int64_t(p.n) * p.oh();
  const double macs = double(p.y_elems()) * p.fh * p.fw;
  const int threads = macs < kSerialMacs ? 1 : omp_get_max_threads();
  int64_t z_n = std::min<int64_t>(rows, (4 * threads + units - 1) / units);
  z_n = std::max<int64_t>(1, std::min(z_n, kMaxPartialFloats / p.w_elems()));
  std::vector<float> partial(size_t((z_n - 1) * p.w_elems()), 0.0f);
  std::fill(dw, dw + p.w_elems(), 0.0f);
  const int64_t tasks = z_n * units;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t z = t / units;
    const int u = int(t % units);
    float* buf = z == 0 ? dw : partial.data() + (z - 1) * p.w_elems();
    const int64_t b = rows * z / z_n, e = rows * (z + 1) / z_n;
    bfc_rows(isa, pl, buf, b, e, unit_begin[u], unit_begin[u + 1]);
  }
  if (z_n > 1) {
    const int64_t n_el = p.w_elems();
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && n_el > 4096)
    for (int64_t k = 0; k < n_el; ++k) {
      float s = dw[k];
      for (int64_t z = 1; z < z_n; ++z) s += partial[(z - 1) * n_el + k];
      dw[k] = s;
    }
  }
}

}  // namespace cpu

void dwconv_forward_cpu(const float* x, const float* w, const float* bias, float* y, const DwconvParams& p) {
  cpu::forward(cpu::best_isa(), x, w, bias, y, p);
}

void dwconv_backward_data_cpu(const float* dy, const float* w, float* dx, const DwconvParams& p) {
  cpu::backward_data(cpu::best_isa(), dy, w, dx, p);
}

void dwconv_backward_filter_cpu(const float* x, const float* dy, float* dw, const DwconvParams& p) {
  cpu::backward_filter(cpu::best_isa(), x, dy, dw, p);
}

}  // namespace cnn::dwconv
