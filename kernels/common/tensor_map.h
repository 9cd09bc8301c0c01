// The driver's cuTensorMapEncodeTiled, found once through the runtime's entry-point query (the project links the
// runtime only). Used by the TMA-fed depthwise kernels to describe their source maps.
#pragma once

#include <cudaTypedefs.h>

namespace cnn::cuda {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder();

}  // namespace cnn::cuda
