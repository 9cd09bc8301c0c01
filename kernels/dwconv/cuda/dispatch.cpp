// CUDA entry points of the depthwise ops (dwconv_cuda.h), FP32 and FP16: validate, ask select() for the plan, launch
// it. The switches below are the only place that maps a plan's kernel to its launcher.
#include <type_traits>

#include "core/cuda_check.h"
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
    default: not_for(plan, "an FP32 forward-style kernel");
  }
}

void run_forward_style(const __half* src, const __half* w, const __half* bias, __half* dst, const Plan& plan,
                       cudaStream_t stream) {
  switch (plan.kernel) {
    case Kernel::fwd_tc: return launch_dwconv_tc_f16(src, w, bias, dst, plan.g, plan.tc_theta, stream);
    case Kernel::fwd_tc_ring:
      return launch_dwconv_tc_ring_f16(src, w, bias, dst, plan.g, plan.ring_q, plan.ring_mma, stream);
    case Kernel::fwd_cc_f16: return launch_dwconv_cc_f16(src, w, bias, dst, plan.g, plan.cc_groups, stream);
    case Kernel::fwd_tma_cc: return launch_dwconv_tma_cc_f16(src, w, bias, dst, plan.g, plan.tma, stream);
    case Kernel::direct: return launch_dwconv_direct_f16_forward(src, w, bias, dst, plan.g, plan.vec, stream);
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
  if (plan.kernel != Kernel::bfc_tile) not_for(plan, "an FP32 backward-filter kernel");
  dwconv_backward_filter_cuda_tile(x, dy, dw, p, plan.bfc, stream);
}
void run_backward_filter(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                         const Plan& plan, cudaStream_t stream) {
  switch (plan.kernel) {
    case Kernel::bfc_tile: return dwconv_backward_filter_cuda_tile_f16(x, dy, dw, p, accum, plan.bfc, stream);
    case Kernel::bfc_strip_f16: return launch_dwconv_bfc_f16_tiled(x, dy, dw, p, accum, BfcF16TiledForce{}, stream);
    case Kernel::bfc_rowwarp_f16: return launch_dwconv_bfc_f16(x, dy, dw, p, accum, BfcF16Force{}, stream);
    default: not_for(plan, "an FP16 backward-filter kernel");
  }
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

template <class T>
void forward(const T* x, const T* w, const T* bias, T* y, const DwconvParams& p, cudaStream_t stream) {
  const char* name = entry_name<T>("dwconv_forward_cuda", "dwconv_forward_cuda(f16)");
  const Plan plan = plan_for(DwconvOp::forward, kDType<T>, name, p, BfcAccum::fp32, x, "x", w, "w", bias, y, "y");
  run_forward_style(x, w, bias, y, plan, stream);
}

template <class T>
void backward_data(const T* dy, const T* w, T* dx, const DwconvParams& p, cudaStream_t stream) {
  const char* name = entry_name<T>("dwconv_backward_data_cuda", "dwconv_backward_data_cuda(f16)");
  const Plan plan =
      plan_for(DwconvOp::backward_data, kDType<T>, name, p, BfcAccum::fp32, dy, "dy", w, "w", nullptr, dx, "dx");
  if (p.stride_h == 1 && p.stride_w == 1)
    run_forward_style(dy, w, nullptr, dx, plan, stream);
  else
    run_strided_backward_data(dy, w, dx, p, plan, stream);
}

template <class T>
void backward_filter(const T* x, const T* dy, float* dw, const DwconvParams& p, BfcAccum accum, cudaStream_t stream) {
  const char* name = entry_name<T>("dwconv_backward_filter_cuda", "dwconv_backward_filter_cuda(f16)");
  const Plan plan =
      plan_for(DwconvOp::backward_filter, kDType<T>, name, p, accum, x, "x", dy, "dy", nullptr, dw, "dw");
  run_backward_filter(x, dy, dw, p, accum, plan, stream);
}

}  // namespace

void dwconv_forward_cuda(const float* x, const float* w, const float* bias, float* y, const DwconvParams& p,
                         cudaStream_t stream) {
  forward(x, w, bias, y, p, stream);
}
void dwconv_backward_data_cuda(const float* dy, const float* w, float* dx, const DwconvParams& p,
                               cudaStream_t stream) {
  backward_data(dy, w, dx, p, stream);
}
void dwconv_backward_filter_cuda(const float* x, const float* dy, float* dw, const DwconvParams& p,
                                 cudaStream_t stream) {
  backward_filter(x, dy, dw, p, BfcAccum::fp32, stream);
}

void dwconv_forward_cuda(const __half* x, const __half* w, const __half* bias, __half* y, const DwconvParams& p,
                         cudaStream_t stream) {
  forward(x, w, bias, y, p, stream);
}
void dwconv_backward_data_cuda(const __half* dy, const __half* w, __half* dx, const DwconvParams& p,
                               cudaStream_t stream) {
  backward_data(dy, w, dx, p, stream);
}
void dwconv_backward_filter_cuda(const __half* x, const __half* dy, float* dw, const DwconvParams& p, BfcAccum accum,
                                 cudaStream_t stream) {
  backward_filter(x, dy, dw, p, accum, stream);
}

}  // namespace cnn::dwconv
