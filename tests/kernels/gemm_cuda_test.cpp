// gemm_cuda against a double-precision host GEMM on the same (FP16-rounded) inputs: FP16 and FP32, every transpose
// pair, beta 0 and 1, row lengths that are and are not multiples of 8, with and without a fused bias. Large FP16
// GEMMs with unaligned rows must run on padded copies (the scratch is asked for), aligned, small, FP32 and strided
// ones as they are; the bias is fused wherever the rows are aligned or padded; nothing is written outside C.
#include "kernels/matmul/gemm_cuda.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/support/device_array.h"
#include "tests/support/numeric.h"

namespace cnn::kernels {
namespace {

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  double beta;
  int64_t ldc_extra;  // C's row stride beyond N
  bool padded;        // FP16: expected to run on padded copies (and then, like aligned rows, to fuse a bias)
};

template <class T>
T to_t(float v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return __float2half(v);
}
template <class T>
float to_f(T v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return __half2float(v);
}

template <class T>
void check_case(const Case& k, cublasHandle_t blas, cublasLtHandle_t lt, bool with_bias, uint64_t seed) {
  GemmParams p;
  p.m = k.m, p.n = k.n, p.k = k.k, p.trans_a = k.ta, p.trans_b = k.tb, p.beta = k.beta;
  p.lda = k.ta ? k.m : k.k, p.ldb = k.tb ? k.k : k.n, p.ldc = k.n + k.ldc_extra;
  const std::string name =
      p.str() + " beta=" + std::to_string(k.beta) + (sizeof(T) == 2 ? " f16" : " f32") + (with_bias ? " bias" : "");
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const auto fill = [&](size_t n) {
    std::vector<T> v(n);
    for (auto& x : v) x = to_t<T>(u(rng));
    return v;
  };
  constexpr float kSentinel = 1234.f;  // C's padding columns and the tail after C must keep it
  const int64_t c_elems = k.m * p.ldc;
  const std::vector<T> a = fill(size_t(k.m * k.k)), b = fill(size_t(k.k * k.n)), bias = fill(size_t(k.n));
  std::vector<T> c0 = fill(size_t(c_elems + 64));
  for (int64_t r = 0; r < k.m; ++r)
    for (int64_t j = k.n; j < p.ldc; ++j) c0[size_t(r * p.ldc + j)] = to_t<T>(kSentinel);
  for (size_t i = size_t(c_elems); i < c0.size(); ++i) c0[i] = to_t<T>(kSentinel);
  test::DeviceArray<T> da(a.size()), db(b.size()), dc(c0.size()), dbias(bias.size());
  da.upload(a.data()), db.upload(b.data()), dc.upload(c0.data()), dbias.upload(bias.data());
  size_t asked = 0;
  void* scratch_mem = nullptr;
  const GemmScratch scratch = [&](size_t bytes) {
    asked = bytes;
    cudaFree(scratch_mem);
    EXPECT_EQ(cudaMalloc(&scratch_mem, bytes), cudaSuccess);
    return scratch_mem;
  };
  const GemmCuda env{.blas = blas, .lt = lt, .stream = nullptr, .scratch = scratch};
  const bool fused = gemm_cuda<T>(da.get(), db.get(), dc.get(), p, env, with_bias ? dbias.get() : nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << name;
  cudaFree(scratch_mem);
  const bool expect_padded = std::is_same_v<T, __half> && k.padded;
  const bool aligned = k.n % 8 == 0 && k.k % 8 == 0 && (!k.ta || k.m % 8 == 0) && k.ldc_extra == 0;
  if (!with_bias) {
    EXPECT_TRUE(fused) << name;
    EXPECT_EQ(asked > 0, expect_padded) << "scratch asked for " << asked << " bytes: " << name;
  } else if (expect_padded || aligned) {
    EXPECT_TRUE(fused) << "bias not fused: " << name;
  }
  const bool add_bias = with_bias && fused;  // unfused, the caller adds it afterwards

  const std::vector<T> c = dc.template download<T>();
  // Bound: FP32 accumulation (at most 2 ulps of 2^-24 per add, the tensor cores truncating) over the sum of |terms|,
  // plus the output's rounding (2^-11 relative in FP16); a dropped or doubled term (~S/K) is far above it for K < 2048.
  // FP16 with beta != 0: cuBLAS's FP16 epilogue rounds alpha op(A) op(B) to FP16 before adding beta C (and then the
  // bias), the unpadded aligned GEMM as much as the padded one (H200: up to 0.9 ulp of C at |C| ~ 17, 1.7 ulp where
  // the terms cancel). Each of those up to two extra roundings is at most 2^-11 of a partial sum, so that case adds
  // 2 * 2^-11 (|AB| + |beta C| + |bias|). The worst error is printed in units of 2^-11 max(|ref|, 1) (FP32: 2^-24).
  const double out_ulp = std::is_same_v<T, __half> ? std::ldexp(1.0, -11) : std::ldexp(1.0, -24);
  const bool rounds_terms = std::is_same_v<T, __half> && k.beta != 0.0;
  size_t bad = 0;
  double worst = 0.0;
  for (int64_t i = 0; i < k.m; ++i)
    for (int64_t j = 0; j < p.ldc; ++j) {
      const float got = to_f(c[size_t(i * p.ldc + j)]);
      if (j >= k.n) {
        bad += got != kSentinel;
        continue;
      }
      double ab = 0.0, s = 0.0;
      for (int64_t l = 0; l < k.k; ++l) {
        const double x = to_f(a[size_t(k.ta ? l * k.m + i : i * k.k + l)]);
        const double y = to_f(b[size_t(k.tb ? j * k.k + l : l * k.n + j)]);
        ab += x * y, s += std::abs(x * y);
      }
      const double bc = k.beta * to_f(c0[size_t(i * p.ldc + j)]), bb = add_bias ? to_f(bias[size_t(j)]) : 0.0;
      const double ref = ab + bc + bb, terms = std::abs(ab) + std::abs(bc) + std::abs(bb);
      s += std::abs(bc) + std::abs(bb);
      const double bound = double(k.k + 1) * std::ldexp(1.0, -22) * s + out_ulp * std::abs(ref) +
                           (rounds_terms ? 2.0 * out_ulp * terms : 0.0) + 1e-30;
      worst = std::max(worst, std::abs(got - ref) / (out_ulp * std::max(std::abs(ref), 1.0)));
      if (std::abs(got - ref) > bound && bad++ < 3)
        ADD_FAILURE() << name << ": C[" << i << "][" << j << "] = " << got << ", reference " << ref;
    }
  std::printf("%s: worst error %.2f output roundings\n", name.c_str(), worst);
  for (size_t i = size_t(c_elems); i < c.size(); ++i) bad += to_f(c[i]) != kSentinel;
  EXPECT_EQ(bad, 0u) << name;
}

TEST(GemmCudaGpu, MatchesDoubleReference) {
  CNN_REQUIRE_GPU();
  cublasHandle_t blas;
  cublasLtHandle_t lt;
  ASSERT_EQ(cublasCreate(&blas), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasLtCreate(&lt), CUBLAS_STATUS_SUCCESS);
  // SLaK-like row lengths (249, 996, 124, 499): the forward, input-gradient and weight-gradient forms, both
  // transposes with zero rows added to K, beta = 1 (C read through its padded copy); aligned, small and strided ones
  // run as they are, the last one at beta = 1 to compare cuBLAS's own FP16 epilogue rounding with the padded one's.
  const Case cases[] = {{1000, 996, 249, false, true, 0.0, 0, true},  {1000, 249, 996, false, false, 0.0, 0, true},
                        {996, 249, 1000, true, false, 0.0, 0, true},  {124, 499, 500, true, true, 0.0, 0, true},
                        {1000, 996, 249, false, true, 1.0, 0, true},  {512, 256, 128, false, true, 0.0, 0, false},
                        {16, 9, 7, false, false, 1.0, 0, false},      {1000, 249, 128, false, true, 0.0, 11, false},
                        {1024, 1024, 256, false, true, 1.0, 0, false}};
  uint64_t seed = 70;
  for (const Case& k : cases)
    for (bool with_bias : {false, true}) {
      check_case<__half>(k, blas, lt, with_bias, seed++);
      check_case<float>(k, blas, lt, with_bias, seed++);
    }
  cublasLtDestroy(lt);
  cublasDestroy(blas);
}

}  // namespace
}  // namespace cnn::kernels
