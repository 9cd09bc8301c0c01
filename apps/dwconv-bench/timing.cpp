// Event-pair timing with a median over the timed runs (see timing.h for the protocol).
#include "apps/dwconv-bench/timing.h"

#include <algorithm>
#include <vector>

#include "core/cuda_check.h"

namespace cnn::bench {
namespace {

// Owns a list of events; destroyed even when a run throws.
class EventList {
 public:
  explicit EventList(int count) : events_(size_t(count), nullptr) {
    for (cudaEvent_t& e : events_) CNN_CUDA_CHECK(cudaEventCreate(&e));
  }
  ~EventList() {
    for (cudaEvent_t e : events_)
      if (e != nullptr) cudaEventDestroy(e);
  }
  EventList(const EventList&) = delete;
  EventList& operator=(const EventList&) = delete;
  cudaEvent_t operator[](int i) const { return events_[size_t(i)]; }

 private:
  std::vector<cudaEvent_t> events_;
};

}  // namespace

Stream::Stream() { CNN_CUDA_CHECK(cudaStreamCreate(&stream_)); }

Timing time_runs(const RunFn& run, int warmup, int reps, cudaStream_t stream) {
  CNN_CHECK(reps >= 1 && warmup >= 0, "time_runs: expected reps >= 1, warmup >= 0, got ", reps, ", ", warmup);
  for (int i = 0; i < warmup; ++i) run(i);
  CNN_CUDA_CHECK(cudaStreamSynchronize(stream));
  // Runs are queued without host synchronization so launch latency never shows up between a start event and its
  // kernel when the GPU is the bottleneck; one sync at the end, then the events are read.
  EventList events(2 * reps);
  for (int r = 0; r < reps; ++r) {
    CNN_CUDA_CHECK(cudaEventRecord(events[2 * r], stream));
    run(warmup + r);
    CNN_CUDA_CHECK(cudaEventRecord(events[2 * r + 1], stream));
  }
  CNN_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> ms(static_cast<size_t>(reps));
  for (int r = 0; r < reps; ++r) {
    float t = 0;
    CNN_CUDA_CHECK(cudaEventElapsedTime(&t, events[2 * r], events[2 * r + 1]));
    ms[size_t(r)] = t;
  }
  std::sort(ms.begin(), ms.end());
  Timing timing;
  timing.reps = reps;
  timing.min_ms = ms.front();
  timing.max_ms = ms.back();
  timing.median_ms = reps % 2 == 1 ? ms[size_t(reps / 2)] : 0.5 * (ms[size_t(reps / 2 - 1)] + ms[size_t(reps / 2)]);
  return timing;
}

double time_once(const RunFn& run, int run_index, cudaStream_t stream) {
  EventList events(2);
  CNN_CUDA_CHECK(cudaEventRecord(events[0], stream));
  run(run_index);
  CNN_CUDA_CHECK(cudaEventRecord(events[1], stream));
  CNN_CUDA_CHECK(cudaStreamSynchronize(stream));
  float t = 0;
  CNN_CUDA_CHECK(cudaEventElapsedTime(&t, events[0], events[1]));
  return t;
}

}  // namespace cnn::bench
