// Programmatic dependent launch (sm_90+): a kernel launched "early" may start while the kernel before it in the
// stream is still running, once every block of that kernel has called allow_dependent_launch() (or exited). Its blocks
// then do their setup during the earlier kernel's last wave and call wait_for_prior_grids() before they touch global
// memory, which returns when the earlier kernel has finished and its writes are visible. Used where a short copy feeds
// a kernel (the channel padding before a padded depthwise plan): the launch gap between them is a few microseconds.
// Before sm_90 both calls compile to nothing and the launch attribute has no effect.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "core/cuda_check.h"

namespace cnn::cuda {

__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// kernel<<<grid, block, smem, stream>>>(args...), or with `early` as a programmatic dependent launch: the kernel must
// then call wait_for_prior_grids() before its first global read or write.
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool early,
                   Args&&... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = early ? &attr : nullptr;
  config.numAttrs = early ? 1 : 0;
  CNN_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace cnn::cuda
