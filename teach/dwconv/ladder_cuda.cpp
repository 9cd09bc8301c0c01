// The GPU rung table and the Tensor-level entry the tests use (see ladder_cuda.h).
#include "teach/dwconv/ladder_cuda.h"

#include <cuda_fp16.h>

#include "core/cuda_check.h"

namespace cnn::teach {

const std::vector<GpuRung>& gpu_rungs() {
  static const std::vector<GpuRung> rungs = {
      {1, "naive", "one thread per output, NCHW thread order (uncoalesced)", DType::f32, forward_naive_unsupported,
       forward_naive_cuda, nullptr},
      {2, "channel_vectors", "one thread per position x float4 of channels (coalesced)", DType::f32,
       forward_channel_vectors_unsupported, forward_channel_vectors_cuda, nullptr},
      {3, "smem_tile", "input rows staged in shared memory, filter tap in registers", DType::f32,
       forward_smem_tile_unsupported, forward_smem_tile_cuda, nullptr},
      {4, "gemv", "row of 8 outputs as a GEMV, input window sliding in registers", DType::f32, forward_gemv_unsupported,
       forward_gemv_cuda, nullptr},
      {5, "register_block", "the GEMV with a 16-output x 4-channel register block and a 2*TM window ring", DType::f32,
       forward_register_block_unsupported, forward_register_block_cuda, nullptr},
      {6, "tensor_core", "16 GEMVs as one banded m16n8k16 FP16 MMA (FP32 accumulation)", DType::f16,
       forward_tensor_core_unsupported, nullptr, forward_tensor_core_cuda},
  };
  return rungs;
}

Tensor run_rung(const GpuRung& rung, const Tensor& x, const Tensor& w, const DwconvParams& p) {
  const std::string op = str_cat("teach rung ", rung.number, " (", rung.name, ")");
  p.validate(op.c_str());
  const Shape x_shape{p.n, p.ih, p.iw, p.c}, w_shape{p.fh, p.fw, p.c};
  for (const auto& [t, shape, name] : {std::tuple{&x, x_shape, "x"}, std::tuple{&w, w_shape, "w"}}) {
    CNN_CHECK(
        t->defined() && t->shape() == shape && t->dtype() == rung.dtype && t->device().is_cuda() && t->is_contiguous(),
        op, ": expected ", name, " contiguous ", dtype_name(rung.dtype), " ", shape_str(shape), " on cuda, got ",
        t->defined() ? t->str() : std::string("an undefined tensor"));
  }
  CNN_CUDA_CHECK(cudaDeviceSynchronize());  // x and w may still be in flight on the tensors' own stream
  Tensor y = Tensor::empty({p.n, p.oh(), p.ow(), p.c}, rung.dtype, x.device(), "teach_y");
  if (rung.dtype == DType::f16) {
    rung.run_f16(static_cast<const __half*>(x.data_ptr()), static_cast<const __half*>(w.data_ptr()),
                 static_cast<__half*>(y.data_ptr()), p, nullptr);
  } else {
    rung.run_f32(x.data<float>(), w.data<float>(), y.data<float>(), p, nullptr);
  }
  CNN_CUDA_CHECK(cudaDeviceSynchronize());
  return y;
}

}  // namespace cnn::teach
