// CUDA hooks of Context in a CPU-only build: a cuda Context cannot exist (require_device refuses first).
#include "core/context.h"
#include "core/error.h"

namespace cnn::detail {

CudaContext* make_cuda_context(int device) {
  throw Error(str_cat("Context: cuda:", device, " requested but this binary was built without CUDA (CNN_CUDA=OFF)"));
}
void* cuda_context_stream(CudaContext*) { throw Error("Context: built without CUDA (CNN_CUDA=OFF)"); }
void cuda_context_synchronize(CudaContext*) { throw Error("Context: built without CUDA (CNN_CUDA=OFF)"); }

}  // namespace cnn::detail
