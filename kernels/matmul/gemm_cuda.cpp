// Row-major GEMM on cuBLAS (column-major): C^T (N, M) = op(B)^T op(A)^T, so B and A swap places and keep their ops.
//
// Bias: cuBLASLt's bias epilogue adds it while C is written (bias per row of C^T, i.e. per column of C), saving the
// separate read and write of C that a broadcast add costs.
//
// FP16 rows that are not 16-byte aligned (a row length not a multiple of 8, as SLaK's 124 / 249 / 499 / 998 channels
// and their 4x expansions give) keep cuBLAS off its fast tensor-core kernels: the H200 ran SLaK-T's pointwise layers
// at 60-85 TFLOP/s against about 490 for ConvMixer-768's aligned ones. Large such GEMMs run on copies in the scratch
// whose rows are padded with zeros to a multiple of 8 elements (kernels/common/channel_pad.cu), every dimension that
// is a row length padded in every operand that has it (zero rows where it is a row count, so padded K adds only zero
// products), and C's first N columns are copied back.
#include <type_traits>

#include "core/cuda_check.h"
#include "kernels/common/channel_pad.h"
#include "kernels/matmul/gemm_cuda.h"

namespace cnn::kernels {

namespace {

constexpr int64_t kRowAlign = kGemmF16RowAlign;
constexpr double kPadMinMacs = 1 << 24;       // below this the copies cost about what the slow kernels lose
constexpr size_t kLtWorkspace = 32u << 20;    // cuBLASLt's suggested workspace on Hopper
constexpr size_t kPiece = 256;                // scratch pieces start 256-byte aligned

int64_t padded(int64_t v) { return (v + kRowAlign - 1) / kRowAlign * kRowAlign; }
bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
size_t piece(size_t bytes) { return (bytes + kPiece - 1) / kPiece * kPiece; }

template <class T>
constexpr cudaDataType_t kType = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16F;

template <class T>
void cublas_gemm(const T* a, const T* b, T* c, const GemmParams& p, cublasHandle_t handle) {
  const float alpha = float(p.alpha), beta = float(p.beta);
  CNN_CUBLAS_CHECK(cublasGemmEx(handle, p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                int(p.n), int(p.m), int(p.k), &alpha, b, kType<T>, int(p.ldb), a, kType<T>,
                                int(p.lda), &beta, c, kType<T>, int(p.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// The cuBLASLt descriptors of one call, destroyed with it.
struct LtCall {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtCall() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

// C = alpha op(A) op(B) + beta C + bias on cuBLASLt; false where it has no algorithm for the call.
template <class T>
bool lt_gemm_bias(const T* a, const T* b, const T* bias, T* c, const GemmParams& p, const GemmCuda& env, void* ws,
                  size_t ws_bytes) {
  LtCall call;
  CNN_CUBLAS_CHECK(cublasLtMatmulDescCreate(&call.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_a = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  const cudaDataType_t bias_type = kType<T>;
  const auto set = [&](cublasLtMatmulDescAttributes_t attr, const void* v, size_t bytes) {
    CNN_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(call.op, attr, v, bytes));
  };
  set(CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a));
  set(CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b));
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
  set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type));
  // Column-major views of the stored matrices: cuBLASLt's A is our B, its B our A, its D our C^T (N rows).
  CNN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&call.la, kType<T>, p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k, p.ldb));
  CNN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&call.lb, kType<T>, p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m, p.lda));
  CNN_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&call.lc, kType<T>, p.n, p.m, p.ldc));
  CNN_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&call.pref));
  CNN_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(call.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                                        sizeof(ws_bytes)));
  cublasLtMatmulHeuristicResult_t best{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(env.lt, call.op, call.la, call.lb, call.lc, call.lc, call.pref, 1, &best,
                                     &found) != CUBLAS_STATUS_SUCCESS ||
      found == 0)
    return false;
  const float alpha = float(p.alpha), beta = float(p.beta);
  CNN_CUBLAS_CHECK(cublasLtMatmul(env.lt, call.op, &alpha, b, call.la, a, call.lb, &beta, c, call.lc, c, call.lc,
                                  &best.algo, ws, ws_bytes, env.stream));
  return true;
}

// A stored matrix (rows x cols, row stride ld) and the padded copy it needs: rows_p x cols_p, contiguous.
struct Operand {
  const __half* p;
  int64_t rows, cols, ld, rows_p, cols_p;
  bool copy() const { return rows_p != rows || cols_p != cols || ld != cols || !aligned16(p); }
  size_t bytes() const { return copy() ? piece(size_t(rows_p * cols_p) * sizeof(__half)) : 0; }
};

// The operand's padded copy at dst: values, zero columns after them, zero rows after those.
void pad_operand(const Operand& o, __half* dst, cudaStream_t stream) {
  launch_pad_channels(o.p, dst, o.rows, int(o.cols), int(o.cols_p), stream);
  if (o.rows_p > o.rows)
    CNN_CUDA_CHECK(
        cudaMemsetAsync(dst + o.rows * o.cols_p, 0, (o.rows_p - o.rows) * o.cols_p * sizeof(__half), stream));
}

// The GEMM (and bias) on padded copies where they apply: FP16, large, rows not all 16-byte aligned, contiguous
// operands. Returns 0 where they do not apply, else 1 + whether the bias was added.
int gemm_on_padded_copies(const __half* a, const __half* b, __half* c, const GemmParams& p, const GemmCuda& env,
                          const __half* bias) {
  if (!env.scratch || !gemm_f16_pads_unaligned(p.m, p.n, p.k)) return 0;
  // Row lengths: A's cols are K (or M when transposed), B's are N (or K), C's are N.
  const bool pad_m = p.trans_a && p.m % kRowAlign != 0;
  const bool pad_k = (!p.trans_a || p.trans_b) && p.k % kRowAlign != 0;
  const int64_t m = pad_m ? padded(p.m) : p.m, k = pad_k ? padded(p.k) : p.k, n = padded(p.n);
  const Operand oa = p.trans_a ? Operand{a, p.k, p.m, p.lda, k, m} : Operand{a, p.m, p.k, p.lda, m, k};
  const Operand ob = p.trans_b ? Operand{b, p.n, p.k, p.ldb, n, k} : Operand{b, p.k, p.n, p.ldb, k, n};
  const Operand oc{c, p.m, p.n, p.ldc, m, n};
  if (!oa.copy() && !ob.copy() && !oc.copy()) return 0;  // cuBLAS's fast kernels take it as it is
  for (const Operand* o : {&oa, &ob, &oc})
    if (o->copy() && o->ld != o->cols) return 0;  // the copies take contiguous rows; a strided view runs as it is
  const Operand obias{bias, 1, p.n, p.n, 1, n};
  const size_t bias_bytes = bias && obias.copy() ? obias.bytes() : 0, ws_bytes = bias && env.lt ? kLtWorkspace : 0;
  char* base = static_cast<char*>(env.scratch(oa.bytes() + ob.bytes() + oc.bytes() + bias_bytes + ws_bytes));
  CNN_CHECK(base != nullptr && aligned16(base), "gemm_cuda: the scratch for padded rows is null or not 16-byte",
            " aligned");
  char* at = base;
  const auto take = [&at](size_t bytes) { char* p = at; at += bytes; return reinterpret_cast<__half*>(p); };
  __half* pa = oa.copy() ? take(oa.bytes()) : const_cast<__half*>(a);
  __half* pb = ob.copy() ? take(ob.bytes()) : const_cast<__half*>(b);
  __half* pc = oc.copy() ? take(oc.bytes()) : c;
  const __half* pbias = bias_bytes ? take(bias_bytes) : bias;
  void* ws = ws_bytes ? take(ws_bytes) : nullptr;
  if (oa.copy()) pad_operand(oa, pa, env.stream);
  if (ob.copy()) pad_operand(ob, pb, env.stream);
  if (oc.copy() && p.beta != 0.0) pad_operand(oc, pc, env.stream);  // C is read
  if (bias_bytes) pad_operand(obias, const_cast<__half*>(pbias), env.stream);
  GemmParams q = p;
  q.m = m, q.n = n, q.k = k;
  q.lda = oa.copy() ? oa.cols_p : p.lda;
  q.ldb = ob.copy() ? ob.cols_p : p.ldb;
  q.ldc = oc.copy() ? oc.cols_p : p.ldc;
  const bool biased = bias && env.lt && lt_gemm_bias(pa, pb, pbias, pc, q, env, ws, ws_bytes);
  if (!biased) cublas_gemm<__half>(pa, pb, pc, q, env.blas);
  if (oc.copy()) launch_crop_channels(pc, c, p.m, int(n), int(p.n), env.stream);
  return 1 + int(biased);
}

}  // namespace

bool gemm_f16_pads_unaligned(int64_t m, int64_t n, int64_t k) { return double(m) * double(n) * double(k) >= kPadMinMacs; }

template <class T>
bool gemm_cuda(const T* a, const T* b, T* c, const GemmParams& p, const GemmCuda& env, const T* bias) {
  p.validate("gemm_cuda");
  if (p.m == 0 || p.n == 0) return true;
  if constexpr (std::is_same_v<T, __half>) {
    if (const int done = gemm_on_padded_copies(a, b, c, p, env, bias)) return bias == nullptr || done == 2;
  }
  if (bias != nullptr && env.lt != nullptr && p.k > 0) {
    void* ws = env.scratch ? env.scratch(kLtWorkspace) : nullptr;
    if (lt_gemm_bias(a, b, bias, c, p, env, ws, ws ? kLtWorkspace : 0)) return true;
  }
  cublas_gemm(a, b, c, p, env.blas);
  return bias == nullptr;
}

template bool gemm_cuda<float>(const float*, const float*, float*, const GemmParams&, const GemmCuda&, const float*);
template bool gemm_cuda<__half>(const __half*, const __half*, __half*, const GemmParams&, const GemmCuda&,
                                const __half*);

}  // namespace cnn::kernels
