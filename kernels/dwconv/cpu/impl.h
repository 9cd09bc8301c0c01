// Internals of the FP32 CPU depthwise-conv backend (dwconv_cpu*.cpp): the two work descriptions every op reduces
// to, the per-ISA row kernels (generic x86-64, AVX2+FMA, AVX-512; chosen at run time) and ISA-explicit entry points
// that tests use to check every code path the machine can run. Public entry points are in dwconv.h.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv::cpu {

enum class Isa { generic, avx2, avx512 };
Isa best_isa();                // the widest of the three that this CPU supports
bool isa_supported(Isa isa);  // whether this CPU can run `isa`
const char* isa_name(Isa isa);

// Channel vectors of the row kernels (GCC vector extensions; each ISA build maps them to its registers).
typedef float V8 __attribute__((vector_size(32)));
typedef float V16 __attribute__((vector_size(64)));

// 64-byte-aligned float scratch (packed rows, packed filters, dW copies): every 16-channel vector is then one
// cache line, where a 16-byte-aligned std::vector would split each one across two lines (two loads' worth).
class AlignedFloats {
 public:
  explicit AlignedFloats(int64_t n = 0) { resize(n); }
  // Reallocates for n floats when n exceeds the capacity; the contents are not kept.
  void resize(int64_t n) {
    if (n <= cap_) return;
    void* p = std::aligned_alloc(64, (size_t(n) * sizeof(float) + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    data_.reset(static_cast<float*>(p));
    cap_ = n;
  }
  float* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t cap_ = 0;
};

// Channels are cut into blocks: 16 wide while 16 remain, then one block of 8, then single channels.
inline int channel_block(int c0, int c) { return c - c0 >= 16 ? 16 : c - c0 >= 8 ? 8 : 1; }

// One channels-last 2-D correlation, the engine of forward and backward-data:
//   out[n, r, q, c] = bias[c] + sum_{i<fh, j<fw} in[n, r*sh + i - ph, q*sw + j - pw, c] * f[i, j, c]
// in (N, in_h, in_w, C) contiguous and read as zero outside its extent; bias (C) or null; f packed per channel
// block (see pack_filter): the block of width L at channel c0 holds f[i, j, c0..c0+L) at f + c0*fh*fw + (i*fw+j)*L.
// ph, pw may be negative (a crop); fh or fw may be 0 (the output is then bias or zero). The output pitches are
// free so that backward-data phases can write every s-th row and column of dX.
struct CorrPlan {
  const float* in = nullptr;
  int in_h = 0, in_w = 0;
  const float* f = nullptr;
  int fh = 0, fw = 0;
  const float* bias = nullptr;
  int sh = 1, sw = 1, ph = 0, pw = 0;
  float* out = nullptr;
  int out_h = 0, out_w = 0;
  int64_t out_img = 0, out_row = 0, out_col = 0;  // element pitches of n, r and q in out
  int n = 0, c = 0;
};

// Input rows reach the row kernels as zero-padded copies of one channel block, stored phase-major: padded column
// u (input column u - lead) sits at float offset ((u % s) * q + u / s) * L for block width L. Then the outputs of
// one tap (forward) or the filter columns of one phase (backward-filter) are L floats apart for any stride s.
struct RowLayout {
  int s = 1, lead = 0, width = 0, q = 0;  // stride, left padding, padded columns read, columns per phase
};
inline RowLayout row_layout(int s, int lead, int out_w, int fw) {
  RowLayout l;
  l.s = s, l.lead = lead, l.width = (out_w - 1) * s + fw, l.q = (l.width + s - 1) / s;
  return l;
}
// A ring of `slots` packed rows (one per filter row) with the (image, row) key each holds, and one row pointer
// per filter row; the caller allocates ring_floats() floats and `slots` keys and pointers per thread.
struct RowRing {
  float* rows = nullptr;
  int64_t* keys = nullptr;
  const float** row_of_tap = nullptr;
  int slots = 0;
};
inline int64_t ring_floats(int slots, const RowLayout& l) { return int64_t(slots) * l.s * l.q * 16; }

// Backward-filter work: dw[i, j, c] += sum over output rows [row_begin, row_end) of the flattened (n, oh) axis
// and all ow of x[n, oh*sH + i - pT, ow*sW + j - pL, c] * dy[n, oh, ow, c], for channels [c_begin, c_end).
// dw is (fh, fw, C) and is accumulated into, not overwritten.
struct BfcPlan {
  const float* x = nullptr;   // (N, IH, IW, C)
  const float* dy = nullptr;  // (N, OH, OW, C)
  DwconvParams p;
};

#define CNN_DWCONV_CPU_DECLARE_ISA(ns)                                                                      \
  namespace ns {                                                                                            \
  void correlate_rows(const CorrPlan& plan, RowRing ring, int64_t row_begin, int64_t row_end);             \
  void bfc_rows(const BfcPlan& plan, RowRing ring, float* dw, int64_t row_begin, int64_t row_end, int c_begin, \
                int c_end);                                                                                 \
  }
CNN_DWCONV_CPU_DECLARE_ISA(generic)
CNN_DWCONV_CPU_DECLARE_ISA(avx2)
CNN_DWCONV_CPU_DECLARE_ISA(avx512)
#undef CNN_DWCONV_CPU_DECLARE_ISA

// The public entry points with the ISA chosen by the caller (same validation and semantics as dwconv.h).
void forward(Isa isa, const float* x, const float* w, const float* bias, float* y, const DwconvParams& p);
void backward_data(Isa isa, const float* dy, const float* w, float* dx, const DwconvParams& p);
void backward_filter(Isa isa, const float* x, const float* dy, float* dw, const DwconvParams& p);

}  // namespace cnn::dwconv::cpu
