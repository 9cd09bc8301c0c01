// CPU tests of the host emulation of the FP16 backward-filter accumulation modes (ref/reference_f16.cpp):
// fp32 mode within FP32 rounding of the FP64 reference, hybrid mode with FP16-sized errors on long reductions,
// and the run boundaries of hybrid accumulation checked on a hand-computed case.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "kernels/dwconv/dwconv.h"
#include "tests/kernels/dwconv_fp16_test_util.h"

namespace cnn::dwconv {
namespace {

using f16test::Case;

struct ModeErrors {
  f16test::ErrorStats fp32, ha;
};

ModeErrors emulate(const Case& k, uint64_t seed) {
  const DwconvParams p = k.params();
  const f16test::HalfData d = f16test::make_data(p, seed);
  const f16test::References ref = f16test::references(p, d);
  std::vector<float> dw(size_t(p.w_elems()));
  dwconv_backward_filter_reference_f16(d.x.data(), d.dy.data(), dw.data(), p, BfcAccum::fp32);
  const double l_terms = double(p.n) * p.oh() * p.ow();
  ModeErrors e;
  e.fp32 = f16test::compare(std::vector<double>(dw.begin(), dw.end()), ref.dw, ref.dw_mag,
                            f16test::fp32_output_bound(l_terms));
  e.ha = f16test::compare(ref.dw_ha_emulated, ref.dw, ref.dw_mag, f16test::ha_bound(l_terms));
  std::printf("%s seed=%llu: emulated BFC MARE fp32 %.3e ha %.3e\n", p.str().c_str(),
              static_cast<unsigned long long>(seed), e.fp32.mare, e.ha.mare);
  return e;
}

TEST(DwconvReferenceF16, Fp32AndHaStayWithinTheirRoundingBounds) {
  uint64_t seed = 70;
  for (const Case& k : {Case{2, 17, 34, 12, 7, 7, 1, 1, 3, 3, 3, 3}, Case{1, 17, 34, 9, 5, 3, 2, 2, 2, 1, 0, 2},
                        Case{1, 17, 70, 8, 3, 13, 1, 1, 1, 1, 6, 6}}) {
    const ModeErrors e = emulate(k, seed);
    f16test::expect_ok(e.fp32, "fp32 emulation " + k.params().str() + " seed=" + std::to_string(seed));
    f16test::expect_ok(e.ha, "ha emulation " + k.params().str() + " seed=" + std::to_string(seed));
    ++seed;
  }
}

TEST(DwconvReferenceF16, HaErrorExceedsFp32ErrorOnLongReductions) {
  // L = 4*32*32 = 4096 products per dW element: FP32 accumulation of exact FP16 products errs by ~1e-7
  // relative, FP16 runs of 32 steps by ~1e-4..1e-3 (2^-11 per step on partials of a few units).
  const ModeErrors e = emulate(Case{4, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1}, 91);
  f16test::expect_ok(e.ha, "ha emulation, long reduction");
  EXPECT_GT(e.ha.mare, 10 * e.fp32.mare) << "hybrid accumulation should be visibly less accurate than FP32";
  EXPECT_LT(e.fp32.mare, 1e-5) << "FP32 accumulation of exact products should stay near FP32 rounding";
  EXPECT_GT(e.ha.mare, 1e-5) << "FP16 runs should show FP16-sized rounding";
  EXPECT_LT(e.ha.mare, 1e-2) << "runs of 32 keep the FP16 error bounded";
}

// 1x1 filter, one row of 40 columns: x = 1, dy = 1 then 2^-12 (a quarter FP16 ulp of 1). The first run
// (columns 0..31) stays at 1 in FP16; the second run (32..39) sums exactly to 8 * 2^-12; FP32 keeps every term.
TEST(DwconvReferenceF16, HaRunsSplitAtMultiplesOf32Columns) {
  DwconvParams p;
  p.n = 1, p.ih = 1, p.iw = 40, p.c = 1, p.fh = 1, p.fw = 1;
  std::vector<Half> x(40, Half(1.f)), dy(40, Half(1.f / 4096));
  dy[0] = Half(1.f);
  float ha = 0, fp32 = 0;
  dwconv_backward_filter_reference_f16(x.data(), dy.data(), &ha, p, BfcAccum::ha);
  dwconv_backward_filter_reference_f16(x.data(), dy.data(), &fp32, p, BfcAccum::fp32);
  static_assert(kBfcHaRun == 32, "the expected values below assume runs of 32 columns");
  EXPECT_EQ(ha, 1.f + 8.f / 4096) << "first run rounds to 1 in FP16, second run is exact";
  EXPECT_EQ(fp32, 1.f + 39.f / 4096) << "FP32 accumulation of exact products is exact here";
}

}  // namespace
}  // namespace cnn::dwconv
