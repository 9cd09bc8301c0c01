// Row-major GEMM on cuBLAS (column-major): C^T (N, M) = op(B)^T op(A)^T, so B and A swap places and keep their ops.
//
// FP16 rows that are not 16-byte aligned (a row length not a multiple of 8, as SLaK's 124 / 249 / 499 / 998 channels
// and their 4x expansions give) keep cuBLAS off its fast tensor-core kernels: the H200 ran SLaK-T's pointwise layers
// at 60-85 TFLOP/s against about 490 for ConvMixer-768's aligned ones. Large such GEMMs run on copies in the caller's
// scratch whose rows are padded with zeros to a multiple of 8 elements (kernels/common/channel_pad.cu), every
// dimension that is a row length padded in every operand that has it (zero rows where it is a row count, so padded
// K adds only zero products), and C's first N columns are copied back.
#include <type_traits>

#include "core/cuda_check.h"
#include "kernels/common/channel_pad.h"
#include "kernels/matmul/gemm_cuda.h"

namespace cnn::kernels {

namespace {

constexpr int64_t kRowAlign = 8;        // FP16 elements per 16 bytes
constexpr double kPadMinMacs = 1 << 24;  // below this the copies cost about what the slow kernels lose

int64_t padded(int64_t v) { return (v + kRowAlign - 1) / kRowAlign * kRowAlign; }
bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <class T>
void cublas_gemm(const T* a, const T* b, T* c, const GemmParams& p, cublasHandle_t handle) {
  constexpr cudaDataType_t kType = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16F;
  const float alpha = float(p.alpha), beta = float(p.beta);
  CNN_CUBLAS_CHECK(cublasGemmEx(handle, p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                int(p.n), int(p.m), int(p.k), &alpha, b, kType, int(p.ldb), a, kType, int(p.lda),
                                &beta, c, kType, int(p.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// A stored matrix (rows x cols, row stride ld) and the padded copy it needs: rows_p x cols_p, contiguous.
struct Operand {
  const __half* p;
  int64_t rows, cols, ld, rows_p, cols_p;
  bool copy() const { return rows_p != rows || cols_p != cols || ld != cols || !aligned16(p); }
  int64_t bytes() const { return copy() ? (rows_p * cols_p * int64_t(sizeof(__half)) + 255) / 256 * 256 : 0; }
};

// The operand's padded copy at dst: values, zero columns after them, zero rows after those.
void pad_operand(const Operand& o, __half* dst, cudaStream_t stream) {
  launch_pad_channels(o.p, dst, o.rows, int(o.cols), int(o.cols_p), stream);
  if (o.rows_p > o.rows)
    CNN_CUDA_CHECK(cudaMemsetAsync(dst + o.rows * o.cols_p, 0, (o.rows_p - o.rows) * o.cols_p * sizeof(__half), stream));
}

// The padded-copy GEMM where it applies (FP16, large, rows not all 16-byte aligned, contiguous operands); false
// otherwise.
bool gemm_on_padded_copies(const __half* a, const __half* b, __half* c, const GemmParams& p, cublasHandle_t handle,
                           const GemmScratch& scratch) {
  if (!scratch || double(p.m) * double(p.n) * double(p.k) < kPadMinMacs) return false;
  // Row lengths: A's cols are K (or M when transposed), B's are N (or K), C's are N.
  const bool pad_m = p.trans_a && p.m % kRowAlign != 0;
  const bool pad_k = (!p.trans_a || p.trans_b) && p.k % kRowAlign != 0;
  const int64_t m = pad_m ? padded(p.m) : p.m, k = pad_k ? padded(p.k) : p.k, n = padded(p.n);
  const Operand oa = p.trans_a ? Operand{a, p.k, p.m, p.lda, k, m} : Operand{a, p.m, p.k, p.lda, m, k};
  const Operand ob = p.trans_b ? Operand{b, p.n, p.k, p.ldb, n, k} : Operand{b, p.k, p.n, p.ldb, k, n};
  const Operand oc{c, p.m, p.n, p.ldc, m, n};
  if (!oa.copy() && !ob.copy() && !oc.copy()) return false;  // cuBLAS's fast kernels take it as it is
  // The copies take contiguous rows; a strided view keeps the direct call.
  for (const Operand* o : {&oa, &ob, &oc})
    if (o->copy() && o->ld != o->cols) return false;
  char* base = static_cast<char*>(scratch(size_t(oa.bytes() + ob.bytes() + oc.bytes())));
  CNN_CHECK(base != nullptr && aligned16(base), "gemm_cuda: the scratch for padded rows is null or not 16-byte aligned");
  cudaStream_t stream = nullptr;
  CNN_CUBLAS_CHECK(cublasGetStream(handle, &stream));
  __half* pa = oa.copy() ? reinterpret_cast<__half*>(base) : const_cast<__half*>(a);
  __half* pb = ob.copy() ? reinterpret_cast<__half*>(base + oa.bytes()) : const_cast<__half*>(b);
  __half* pc = oc.copy() ? reinterpret_cast<__half*>(base + oa.bytes() + ob.bytes()) : c;
  if (oa.copy()) pad_operand(oa, pa, stream);
  if (ob.copy()) pad_operand(ob, pb, stream);
  if (oc.copy() && p.beta != 0.0) pad_operand(oc, pc, stream);  // C is read
  GemmParams q = p;
  q.m = m, q.n = n, q.k = k;
  q.lda = oa.copy() ? oa.cols_p : p.lda;
  q.ldb = ob.copy() ? ob.cols_p : p.ldb;
  q.ldc = oc.copy() ? oc.cols_p : p.ldc;
  cublas_gemm(pa, pb, pc, q, handle);
  if (oc.copy()) launch_crop_channels(pc, c, p.m, int(n), int(p.n), stream);
  return true;
}

}  // namespace

template <class T>
void gemm_cuda(const T* a, const T* b, T* c, const GemmParams& p, cublasHandle_t handle, const GemmScratch& scratch) {
  p.validate("gemm_cuda");
  if (p.m == 0 || p.n == 0) return;
  if constexpr (std::is_same_v<T, __half>) {
    if (gemm_on_padded_copies(a, b, c, p, handle, scratch)) return;
  }
  cublas_gemm(a, b, c, p, handle);
}

template void gemm_cuda<float>(const float*, const float*, float*, const GemmParams&, cublasHandle_t,
                               const GemmScratch&);
template void gemm_cuda<__half>(const __half*, const __half*, __half*, const GemmParams&, cublasHandle_t,
                                const GemmScratch&);

}  // namespace cnn::kernels
