// The CUDA LayerNorm kernels (kernels/norm/layernorm_cuda.cu) against the FP64 CPU kernels on the same f32 / f16
// values: y, mean, rstd, dx, dgamma, dbeta for C = 5 to 1023 (rows in registers, every pack width: 16-, 8-, 4-byte
// packs and single elements) and 1030 (the loop kernels and the column pass), rows that fill no block exactly (3, 198)
// and 34542 rows (backward chunks of 34 rows: groups of one block run different row counts). Each case also runs on
// pointers one element off 16-byte alignment (single-element loads), with dx or the parameter gradients left out,
// and checks that nothing outside the outputs is written and that dgamma / dbeta do not depend on the pack width.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/norm/norm.h"
#include "kernels/norm/norm_cuda.h"
#include "tests/support/numeric.h"

namespace cnn::kernels {
namespace {

template <class T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return double(__half2float(v));
  } else {
    return double(v);
  }
}
template <class T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half(float(v));
  } else {
    return T(v);
  }
}

// A device array of n elements starting `lead` elements into an allocation with kGuard sentinel bytes after it.
template <class T>
class Buffer {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kSentinel = 0xA5;
  Buffer(size_t n, size_t lead) : n_(n), lead_(lead), bytes_((lead + n) * sizeof(T) + kGuard) {
    EXPECT_EQ(cudaMalloc(&base_, bytes_), cudaSuccess);
    EXPECT_EQ(cudaMemset(base_, kSentinel, bytes_), cudaSuccess);
  }
  ~Buffer() { cudaFree(base_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  T* data() const { return reinterpret_cast<T*>(base_) + lead_; }
  void upload(const std::vector<T>& v) const {
    ASSERT_EQ(cudaMemcpy(data(), v.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> v(n_);
    EXPECT_EQ(cudaMemcpy(v.data(), data(), n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
  // Bytes outside the array that no longer hold the sentinel.
  size_t stray_writes() const {
    std::vector<uint8_t> all(bytes_);
    EXPECT_EQ(cudaMemcpy(all.data(), base_, bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
    size_t bad = 0;
    for (size_t i = 0; i < bytes_; ++i) {
      const bool inside = i >= lead_ * sizeof(T) && i < (lead_ + n_) * sizeof(T);
      bad += !inside && all[i] != kSentinel;
    }
    return bad;
  }

 private:
  size_t n_, lead_, bytes_;
  void* base_ = nullptr;
};

template <class T>
std::vector<double> widen_all(const std::vector<T>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_double(v[i]);
  return out;
}

// |got - want| <= atol + rtol |want| everywhere; the message names the worst element.
::testing::AssertionResult near(const std::vector<double>& want, const std::vector<double>& got, double atol,
                                double rtol, const std::string& what) {
  size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::abs(got[i] - want[i]), excess = err / (atol + rtol * std::abs(want[i]));
    bad += !(excess <= 1.0);  // NaN counts as bad
    if (!(excess <= worst_excess)) {
      worst_excess = excess;
      worst = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << want.size() << " elements off; worst at "
                                       << worst << ": want " << want[worst] << " got " << got[worst];
}

template <class T>
bool bitwise_same(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

struct Case {
  int64_t rows, c;
};

// Tolerances against FP64 on identical inputs. f32: FP32 statistics and sums in another order, |x| <= 3.5, |y|,
// |dx| <~ 10, dgamma / dbeta sums of up to 34542 rows of |dy xhat| <~ 5: 1e-4 absolute and relative (the layer
// tests' rule). f16: one rounding of each output (2^-11 relative) on top of the FP32 error, so 1e-3 relative; near
// zero the FP32 error dominates: 1e-4 absolute for y and dx, 1e-3 for the long sums.
template <class T>
void check_case(const Case& k, uint64_t seed) {
  constexpr bool kHalf = std::is_same_v<T, __half>;
  const std::string name =
      std::string(kHalf ? "f16" : "f32") + " rows=" + std::to_string(k.rows) + " C=" + std::to_string(k.c);
  const NormParams p{k.rows, k.c, 1e-6};
  const size_t n = size_t(k.rows * k.c), c = size_t(k.c), rows = size_t(k.rows);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> wide(-3, 3), unit(-1, 1);
  std::normal_distribution<double> normal(0, 1);
  std::vector<T> x(n), dy(n), gamma(c), beta(c);
  for (auto& v : x) v = from_double<T>(wide(rng) + 0.5);
  for (auto& v : dy) v = from_double<T>(normal(rng));
  for (auto& v : gamma) v = from_double<T>(unit(rng));
  for (auto& v : beta) v = from_double<T>(unit(rng));
  const std::vector<double> xd = widen_all(x), dyd = widen_all(dy), gd = widen_all(gamma), bd = widen_all(beta);
  const double out_atol = 1e-4, out_rtol = kHalf ? 1e-3 : 1e-4;
  const double sum_atol = kHalf ? 1e-3 : 1e-4, sum_rtol = kHalf ? 1e-3 : 1e-4;

  // Forward and the full backward at lead 0 (aligned: the widest packs C allows) and lead 1 (single elements).
  std::vector<T> dgamma_at[2], dbeta_at[2];
  Buffer<float> mean(rows, 0), rstd(rows, 0);
  Buffer<float> ws(norm_workspace_bytes(p) / sizeof(float), 0);
  for (size_t lead : {size_t(0), size_t(1)}) {
    const std::string at = name + " lead=" + std::to_string(lead);
    Buffer<T> xb(n, lead), dyb(n, lead), gb(c, lead), bb(c, lead), y(n, lead), dx(n, lead), dg(c, lead), db(c, lead);
    Buffer<float> lmean(rows, 0), lrstd(rows, 0);
    xb.upload(x);
    dyb.upload(dy);
    gb.upload(gamma);
    bb.upload(beta);
    layernorm_forward_cuda<T>(xb.data(), gb.data(), bb.data(), y.data(), lmean.data(), lrstd.data(), p, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << at;
    std::vector<double> y_ref(n), mean_ref(rows), rstd_ref(rows);
    layernorm_forward_cpu(xd.data(), gd.data(), bd.data(), y_ref.data(), mean_ref.data(), rstd_ref.data(), p);
    EXPECT_TRUE(near(y_ref, widen_all(y.download()), out_atol, out_rtol, at + " y"));
    EXPECT_TRUE(near(mean_ref, widen_all(lmean.download()), 1e-6, 1e-5, at + " mean"));
    EXPECT_TRUE(near(rstd_ref, widen_all(lrstd.download()), 1e-6, 1e-5, at + " rstd"));
    EXPECT_EQ(y.stray_writes() + lmean.stray_writes() + lrstd.stray_writes(), 0u) << at << ": forward wrote outside";

    // The backward at both leads takes lead 0's statistics, so dgamma / dbeta can be compared bit for bit.
    if (lead == 0) {
      ASSERT_EQ(cudaMemcpy(mean.data(), lmean.data(), rows * sizeof(float), cudaMemcpyDeviceToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(rstd.data(), lrstd.data(), rows * sizeof(float), cudaMemcpyDeviceToDevice), cudaSuccess);
    }
    std::vector<double> mu = widen_all(mean.download()), rs = widen_all(rstd.download());
    layernorm_backward_cuda<T>(dyb.data(), xb.data(), gb.data(), mean.data(), rstd.data(), dx.data(), dg.data(),
                               db.data(), p, ws.data(), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << at;
    std::vector<double> dx_ref(n), dg_ref(c), db_ref(c);
    layernorm_backward_cpu(dyd.data(), xd.data(), gd.data(), mu.data(), rs.data(), dx_ref.data(), dg_ref.data(),
                           db_ref.data(), p);
    const std::vector<T> dx_full = dx.download();
    dgamma_at[lead] = dg.download();
    dbeta_at[lead] = db.download();
    EXPECT_TRUE(near(dx_ref, widen_all(dx_full), out_atol, out_rtol, at + " dx"));
    EXPECT_TRUE(near(dg_ref, widen_all(dgamma_at[lead]), sum_atol, sum_rtol, at + " dgamma"));
    EXPECT_TRUE(near(db_ref, widen_all(dbeta_at[lead]), sum_atol, sum_rtol, at + " dbeta"));
    EXPECT_EQ(dx.stray_writes() + dg.stray_writes() + db.stray_writes(), 0u) << at << ": backward wrote outside";

    // dx alone, then the parameter gradients alone (one of them): the same values as the full backward.
    Buffer<T> dx2(n, lead), dg2(c, lead);
    layernorm_backward_cuda<T>(dyb.data(), xb.data(), gb.data(), mean.data(), rstd.data(), dx2.data(), nullptr, nullptr,
                               p, ws.data(), nullptr);
    layernorm_backward_cuda<T>(dyb.data(), xb.data(), gb.data(), mean.data(), rstd.data(), nullptr, dg2.data(), nullptr,
                               p, ws.data(), nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << at;
    EXPECT_TRUE(bitwise_same(dx_full, dx2.download())) << at << ": dx alone differs from the full backward";
    EXPECT_TRUE(bitwise_same(dgamma_at[lead], dg2.download())) << at << ": dgamma alone differs";
    EXPECT_EQ(dx2.stray_writes() + dg2.stray_writes(), 0u) << at << ": partial backward wrote outside";
  }
  // Per-channel sums run in an order fixed by the shape alone.
  EXPECT_TRUE(bitwise_same(dgamma_at[0], dgamma_at[1])) << name << ": dgamma depends on the pointers' alignment";
  EXPECT_TRUE(bitwise_same(dbeta_at[0], dbeta_at[1])) << name << ": dbeta depends on the pointers' alignment";
}

// C: 5 (4 lanes per row), 96 and 124 (ConvNeXt's and SLaK's first stage: 8 or 16 lanes per row, f16 in 16- and
// 8-byte packs), 249 and 499 (odd: single elements), 768, 998 (f16 4-byte, f32 8-byte packs, 32 values per lane)
// and 1023 (32 single elements per lane), 1030 (past the registers).
const Case kCases[] = {{198, 5},   {198, 96},  {3, 96},     {198, 124},  {198, 249},  {198, 499},
                       {198, 768}, {198, 998}, {198, 1023}, {198, 1030}, {34542, 96}, {34542, 249}};

TEST(LayerNormCudaGpu, MatchesFp64F32) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 100;
  for (const Case& k : kCases) check_case<float>(k, seed++);
}

TEST(LayerNormCudaGpu, MatchesFp64F16) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 200;
  for (const Case& k : kCases) check_case<__half>(k, seed++);
}

}  // namespace
}  // namespace cnn::kernels
