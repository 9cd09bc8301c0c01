// The CUDA backend in a build without CUDA: no cuda Tensor can exist there, so reaching it is an error that says
// how the binary was built.
#include "core/error.h"
#include "layers/backend/backend.h"

namespace cnn::backend {

DeviceBackend& cuda_backend() {
  throw Error("cuda tensors need a CUDA build, this binary was built without CUDA (CNN_CUDA=OFF)");
}

}  // namespace cnn::backend
