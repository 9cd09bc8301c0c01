// Threaded data loader: N workers decode and augment samples of the next `prefetch` batches in parallel, batches
// come out in order as NHWC f32/f16 images (B, S, S, C) + i64 labels (B), on the host or on a CUDA device (pinned
// staging + cudaMemcpyAsync on the copy stream, the compute stream waits on an event). Order and augmentation
// depend only on (seed, epoch, dataset index), never on the worker count; see docs/data.md.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "data/dataset.h"
#include "data/device_stager.h"
#include "data/transforms.h"

namespace cnn::data {

struct LoaderConfig {
  int64_t batch_size = 64;
  int workers = 4;
  int prefetch = 4;  // batches being built or ready ahead of the consumer
  uint64_t seed = 0;
  bool shuffle = true;
  // Drops the remainder twice: samples that do not divide among ranks, and the last short batch of a rank.
  bool drop_last = true;
  int rank = 0;        // this process's shard of the epoch
  int world_size = 1;  // number of shards (data-parallel ranks)
  TransformConfig transform;  // channels and empty mean/std are filled from the data set
  DType dtype = DType::f32;   // f32 or f16 images
  Device device = Device::cpu();
  // Stop with an error once more than this fraction of the data set's samples turned out bad (at least one bad
  // sample is always allowed when the fraction is > 0: bad_samples_allowed).
  double max_bad_fraction = 0.01;
};

// Bad samples a loader skips before it stops: floor(max_bad_fraction * size), at least 1 when the fraction is > 0.
int64_t bad_samples_allowed(double max_bad_fraction, int64_t size);

struct Batch {
  Tensor images;                 // (B, S, S, C) f32 or f16 on the loader's device
  Tensor labels;                 // (B) i64 on the loader's device
  std::vector<int64_t> indices;  // dataset index of each row (after bad-sample replacement)
  int64_t epoch = 0;
  int64_t batch = 0;  // position in the epoch
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, LoaderConfig config);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // This rank's samples and batches per epoch.
  int64_t samples_per_epoch() const;
  int64_t batches_per_epoch() const;
  // Starts `epoch` at batch `first_batch` (0 for a fresh epoch; a resume passes the next unseen batch). Any
  // unfinished epoch is abandoned.
  void start_epoch(int64_t epoch, int64_t first_batch = 0);
  // The next batch of the epoch in order, or nullopt once the epoch is exhausted (or before start_epoch).
  // Rethrows a worker's error (e.g. too many bad samples). Device batches are ordered before later work on the
  // device's compute stream; the host does not wait for the copy.
  std::optional<Batch> next();

  // Distinct bad samples seen so far (each reported once on stderr).
  int64_t bad_samples() const;
  const LoaderConfig& config() const { return config_; }
  const Dataset& dataset() const { return *dataset_; }

 private:
  struct Slot {  // one batch being built or ready; batch k lives in slot k % prefetch
    int64_t batch = -1;
    int64_t rows = 0;
    int64_t remaining = 0;
    bool done = false;
    Tensor images, labels;  // host batch (CPU) or pinned staging views (device)
    Tensor dev_images, dev_labels;
    std::vector<int64_t> indices;
    std::exception_ptr error;
  };
  struct Task {
    int64_t batch = 0, row = 0, index = 0;
    int slot = 0;
    void* image_dst = nullptr;
    int64_t* label_dst = nullptr;
    int64_t* index_dst = nullptr;
  };

  void worker_loop();
  bool has_work() const;    // called with mu_ held
  void claim(Task& task);   // called with mu_ held
  void open_batch(int64_t batch, int slot);
  void finish_task(const Task& task, std::exception_ptr error);
  void load_sample(int64_t index, uint64_t epoch, void* dst, int64_t* label, int64_t* final_index);
  bool is_known_bad(int64_t index) const;
  void record_bad(int64_t index, const std::string& reason);

  std::shared_ptr<const Dataset> dataset_;
  LoaderConfig config_;
  int64_t row_elems_ = 0;  // S * S * C
  std::vector<Tensor> staging_images_, staging_labels_;  // pinned, one pair per slot (device batches)
  std::vector<Tensor> host_images_, host_labels_;        // recycled per slot (host batches)
  std::unique_ptr<DeviceStager> stager_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_, idle_cv_;
  std::vector<Slot> slots_;
  std::vector<int64_t> order_;  // this rank's dataset indices for the epoch
  bool active_ = false, stop_ = false;
  int64_t epoch_ = 0, end_batch_ = 0, next_pos_ = 0, end_pos_ = 0, next_out_ = 0;
  int64_t in_flight_ = 0;

  mutable std::mutex bad_mu_;
  std::set<int64_t> bad_;
  std::vector<std::thread> threads_;
};

}  // namespace cnn::data
