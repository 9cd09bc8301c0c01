// Context: per-device execution state. CPU: the OpenMP thread count. CUDA: compute and copy streams, cuBLAS /
// cuBLASLt handles, a lazily created cuDNN handle and a grow-on-demand workspace (typed access in
// core/cuda_context.h). One Context per device, created on first use by Context::get and kept until exit.
#pragma once

#include <memory>
#include <mutex>

#include "core/device.h"

namespace cnn {

class CudaContext;

class Context {
 public:
  // Throws cnn::Error when the device cannot be used (see require_device).
  static Context& get(Device device);

  Device device() const { return device_; }
  // Threads used by CPU kernels (OpenMP); defaults to omp_get_max_threads().
  int cpu_threads() const;
  void set_cpu_threads(int n);

  // CUDA state of a cuda context; throws for the cpu context and in a CPU-only build.
  CudaContext& cuda();
  // The compute stream as an opaque handle (a cudaStream_t), for code that must not include CUDA headers.
  void* compute_stream_handle();
  // Waits for all work queued on this device's streams; no-op on cpu.
  void synchronize();

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

 private:
  explicit Context(Device device);
  Device device_;
  CudaContext* cuda_ = nullptr;  // owned, never destroyed (lives to process exit)
};

namespace detail {
// Creates the CUDA state of a device (CUDA builds) or throws "built without CUDA".
CudaContext* make_cuda_context(int device);
void* cuda_context_stream(CudaContext* c);
void cuda_context_synchronize(CudaContext* c);
}  // namespace detail

}  // namespace cnn
