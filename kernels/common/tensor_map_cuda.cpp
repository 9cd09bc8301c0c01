#include "kernels/common/tensor_map.h"

#include <cuda_runtime.h>

#include "core/cuda_check.h"

namespace cnn::cuda {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult status{};
    CNN_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &status));
    CNN_CHECK(status == cudaDriverEntryPointSuccess && p != nullptr,
              "tensor map: the CUDA driver does not provide cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

}  // namespace cnn::cuda
