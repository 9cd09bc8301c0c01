// CUDA-event timing of the benchmark protocol: warm-up runs, then `reps` runs queued back to back, each between
// its own pair of events, median reported. The run callback gets the run index to pick its rotated inputs.
#pragma once

#include <cuda_runtime.h>

#include <functional>

namespace cnn::bench {

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int reps = 0;
};

// The benchmarks' stream. Blocking: the synchronous cudaMemcpy uploads (legacy default stream) are ordered before
// its work.
class Stream {
 public:
  Stream();
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

using RunFn = std::function<void(int run_index)>;

// Runs `warmup` untimed calls (indices 0..warmup-1), then `reps` timed ones (continuing the index).
Timing time_runs(const RunFn& run, int warmup, int reps, cudaStream_t stream);

// Times one call (index `run_index`) on its own; used to probe and prune slow candidates.
double time_once(const RunFn& run, int run_index, cudaStream_t stream);

}  // namespace cnn::bench
