// Row-major GEMM on cuBLAS (column-major): C^T (N, M) = op(B)^T op(A)^T, so B and A swap places and keep their ops.
#include <type_traits>

#include "core/cuda_check.h"
#include "kernels/matmul/gemm_cuda.h"

namespace cnn::kernels {

template <class T>
void gemm_cuda(const T* a, const T* b, T* c, const GemmParams& p, cublasHandle_t handle) {
  p.validate("gemm_cuda");
  if (p.m == 0 || p.n == 0) return;
  constexpr cudaDataType_t kType = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16F;
  const float alpha = float(p.alpha), beta = float(p.beta);
  CNN_CUBLAS_CHECK(cublasGemmEx(handle, p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                int(p.n), int(p.m), int(p.k), &alpha, b, kType, int(p.ldb), a, kType, int(p.lda),
                                &beta, c, kType, int(p.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

template void gemm_cuda<float>(const float*, const float*, float*, const GemmParams&, cublasHandle_t);
template void gemm_cuda<__half>(const __half*, const __half*, __half*, const GemmParams&, cublasHandle_t);

}  // namespace cnn::kernels
