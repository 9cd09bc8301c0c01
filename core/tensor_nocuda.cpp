// Tensor device hooks in a CPU-only build: no CUDA tensor can exist, so reaching one is an error.
#include "core/error.h"
#include "core/tensor_device.h"

namespace cnn::detail {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw Error(str_cat(what, ": this binary was built without CUDA (CNN_CUDA=OFF)"));
}
}  // namespace

void cuda_strided_copy(int, const void*, void*, const StridedCopy&) { no_cuda("Tensor copy on cuda"); }
void cuda_convert(int, const void*, DType, void*, DType, int64_t) { no_cuda("Tensor dtype conversion on cuda"); }
void cuda_fill(int, void*, uint64_t, int, int64_t) { no_cuda("Tensor::fill_ on cuda"); }
void cuda_random(int, void*, DType, int64_t, const RandomParams&) { no_cuda("Tensor random init on cuda"); }
void cuda_axpy(int, const void*, DType, void*, DType, int64_t, double) { no_cuda("Tensor::add_ on cuda"); }
void cuda_memcpy(const void*, Device, void*, Device, int64_t) { no_cuda("Tensor device copy"); }

}  // namespace cnn::detail
