// DeviceTimeline without CUDA: a CUDA timeline cannot be created.
#include "core/error.h"
#include "core/timeline.h"

namespace cnn::detail {

struct CudaEventPool {};

CudaEventPool* cuda_event_pool_create(int) { throw Error("DeviceTimeline: this build has no CUDA support"); }
void cuda_event_pool_destroy(CudaEventPool*) {}
void cuda_event_pool_record(CudaEventPool*, size_t) { throw Error("DeviceTimeline: this build has no CUDA support"); }
std::vector<double> cuda_event_pool_intervals_ms(CudaEventPool*, size_t) {
  throw Error("DeviceTimeline: this build has no CUDA support");
}

}  // namespace cnn::detail
