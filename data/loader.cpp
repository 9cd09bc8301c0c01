// DataLoader: sample-level work sharing over a window of `prefetch` batches, in-order hand-out, bad-sample
// replacement and the bad-data budget.
#include "data/loader.h"

#include <algorithm>
#include <iostream>
#include <new>

#include "core/error.h"
#include "core/error_text.h"
#include "data/sampler.h"
#include "data/opencv.h"

namespace cnn::data {

namespace {

void validate(const LoaderConfig& c, const Dataset& ds) {
  CNN_CHECK(c.batch_size >= 1, "data loader: batch_size must be >= 1, got ", c.batch_size);
  CNN_CHECK(c.workers >= 1 && c.workers <= 1024, "data loader: workers must be in [1, 1024], got ", c.workers);
  CNN_CHECK(c.prefetch >= 1 && c.prefetch <= 1024, "data loader: prefetch must be in [1, 1024], got ", c.prefetch);
  CNN_CHECK(c.world_size >= 1 && c.rank >= 0 && c.rank < c.world_size, "data loader: rank must be in [0, ",
            c.world_size, "), got rank ", c.rank, " of world_size ", c.world_size);
  CNN_CHECK(c.dtype == DType::f32 || c.dtype == DType::f16, "data loader: dtype must be f32 or f16, got ",
            dtype_name(c.dtype));
  CNN_CHECK(c.max_bad_fraction >= 0 && c.max_bad_fraction <= 1, "data loader: max_bad_fraction must be in [0, 1], "
            "got ", c.max_bad_fraction);
  CNN_CHECK(ds.size() >= 1, "data loader: the data set is empty");
  CNN_CHECK(ds.size() >= c.world_size, "data loader: ", ds.size(), " samples cannot be split among ", c.world_size,
            " ranks");
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, LoaderConfig config)
    : dataset_(std::move(dataset)), config_(std::move(config)) {
  CNN_CHECK(dataset_ != nullptr, "data loader: no data set");
  validate(config_, *dataset_);
  TransformConfig& t = config_.transform;
  t.channels = dataset_->channels();
  if (t.mean.empty()) t.mean = dataset_->mean();
  if (t.std.empty()) t.std = dataset_->std();
  data::validate(t);
  row_elems_ = int64_t(t.image_size) * t.image_size * t.channels;
  // Workers are the parallelism; OpenCV's own thread pool inside resize would only oversubscribe the cores.
  cv::setNumThreads(1);
  slots_.resize(size_t(config_.prefetch));
  host_images_.resize(size_t(config_.prefetch));
  host_labels_.resize(size_t(config_.prefetch));
  if (config_.device.is_cuda()) {
    stager_ = std::make_unique<DeviceStager>(config_.device, config_.prefetch);
    const Shape shape{config_.batch_size, t.image_size, t.image_size, t.channels};
    for (int s = 0; s < config_.prefetch; ++s) {
      staging_images_.push_back(Tensor::empty_pinned(shape, config_.dtype, "loader staging images"));
      staging_labels_.push_back(Tensor::empty_pinned({config_.batch_size}, DType::i64, "loader staging labels"));
    }
  }
  for (int w = 0; w < config_.workers; ++w) threads_.emplace_back([this] { worker_loop(); });
}

DataLoader::~DataLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

int64_t DataLoader::samples_per_epoch() const {
  return shard_size(dataset_->size(), config_.world_size, config_.drop_last);
}

int64_t DataLoader::batches_per_epoch() const {
  return batch_count(samples_per_epoch(), config_.batch_size, config_.drop_last);
}

void DataLoader::start_epoch(int64_t epoch, int64_t first_batch) {
  CNN_CHECK(epoch >= 0 && epoch < (int64_t(1) << 32), "data loader: epoch must be in [0, 2^32), got ", epoch);
  const int64_t batches = batches_per_epoch();
  CNN_CHECK(first_batch >= 0 && first_batch <= batches, "data loader: first_batch must be in [0, ", batches,
            "], got ", first_batch);
  std::vector<int64_t> order =
      shard(epoch_permutation(dataset_->size(), config_.seed, epoch, config_.shuffle), config_.rank,
            config_.world_size, config_.drop_last);
  std::unique_lock<std::mutex> lock(mu_);
  active_ = false;  // no new tasks of the old epoch; wait for the running ones (they write into slot buffers)
  idle_cv_.wait(lock, [&] { return in_flight_ == 0; });
  for (Slot& s : slots_) s = Slot{};
  order_ = std::move(order);
  epoch_ = epoch;
  end_batch_ = batches;
  next_out_ = first_batch;
  next_pos_ = first_batch * config_.batch_size;
  end_pos_ = std::min<int64_t>(int64_t(order_.size()), batches * config_.batch_size);
  active_ = true;
  lock.unlock();
  work_cv_.notify_all();
}

std::optional<Batch> DataLoader::next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!active_ || next_out_ >= end_batch_) return std::nullopt;
  const int slot = int(next_out_ % config_.prefetch);
  Slot& s = slots_[size_t(slot)];
  ready_cv_.wait(lock, [&] { return s.batch == next_out_ && s.done; });
  Batch b;
  b.epoch = epoch_;
  b.batch = next_out_;
  b.indices = std::move(s.indices);
  std::exception_ptr error = s.error;
  if (stager_ != nullptr) {
    b.images = std::move(s.dev_images);
    b.labels = std::move(s.dev_labels);
    if (!error) stager_->consumer_wait(slot);
  } else {
    b.images = std::move(s.images);
    b.labels = std::move(s.labels);
  }
  s = Slot{};
  ++next_out_;
  lock.unlock();
  work_cv_.notify_all();
  if (error) std::rethrow_exception(error);
  return b;
}

int64_t DataLoader::bad_samples() const {
  std::lock_guard<std::mutex> lock(bad_mu_);
  return int64_t(bad_.size());
}

void DataLoader::worker_loop() {
  for (;;) {
    Task task;
    uint64_t epoch = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || has_work(); });
      if (stop_) return;
      claim(task);
      epoch = uint64_t(epoch_);
      ++in_flight_;
    }
    std::exception_ptr error;
    if (task.image_dst != nullptr) {
      try {
        load_sample(task.index, epoch, task.image_dst, task.label_dst, task.index_dst);
      } catch (...) {
        error = std::current_exception();
      }
    }
    finish_task(task, error);
  }
}

void DataLoader::claim(Task& task) {
  const int64_t pos = next_pos_++;
  task.batch = pos / config_.batch_size;
  task.row = pos % config_.batch_size;
  task.index = order_[size_t(pos)];
  task.slot = int(task.batch % config_.prefetch);
  if (task.row == 0) open_batch(task.batch, task.slot);
  Slot& s = slots_[size_t(task.slot)];
  if (s.error) return;  // the batch failed to open: the task only counts down
  const int64_t elem = dtype_size(config_.dtype);
  task.image_dst = static_cast<char*>(s.images.data_ptr()) + task.row * row_elems_ * elem;
  task.label_dst = s.labels.data<int64_t>() + task.row;
  task.index_dst = s.indices.data() + task.row;
}

// Prepares slot buffers for `batch`; runs under mu_ when its first sample is claimed (so no other worker can write
// into the slot before it is ready). A failure is kept in the slot and surfaces from next().
void DataLoader::open_batch(int64_t batch, int slot) {
  Slot& s = slots_[size_t(slot)];
  s = Slot{};
  s.batch = batch;
  s.rows = std::min<int64_t>(config_.batch_size, end_pos_ - batch * config_.batch_size);
  s.remaining = s.rows;
  s.indices.assign(size_t(s.rows), -1);
  const TransformConfig& t = config_.transform;
  try {
    if (stager_ != nullptr) {
      // The previous upload from these pinned buffers was queued long ago; it must have finished reading them.
      stager_->wait_slot_free(slot);
      s.images = staging_images_[size_t(slot)].slice(0, 0, s.rows);
      s.labels = staging_labels_[size_t(slot)].slice(0, 0, s.rows);
    } else {
      // Reuse this slot's previous buffers once the consumer has dropped every handle to them (fresh pages would
      // cost a page fault per 4 KiB on every batch); a batch still held elsewhere gets new ones.
      Tensor& images = host_images_[size_t(slot)];
      Tensor& labels = host_labels_[size_t(slot)];
      if (!images.defined() || images.storage().use_count() > 1 || images.size(0) != s.rows) {
        images = Tensor::empty({s.rows, t.image_size, t.image_size, t.channels}, config_.dtype, Device::cpu(),
                               "loader batch images");
      }
      if (!labels.defined() || labels.storage().use_count() > 1 || labels.size(0) != s.rows) {
        labels = Tensor::empty({s.rows}, DType::i64, Device::cpu(), "loader batch labels");
      }
      s.images = images;
      s.labels = labels;
    }
  } catch (...) {
    s.error = std::current_exception();
  }
}

bool DataLoader::has_work() const {
  return active_ && next_pos_ < end_pos_ && next_pos_ / config_.batch_size < next_out_ + config_.prefetch;
}

void DataLoader::finish_task(const Task& task, std::exception_ptr error) {
  std::unique_lock<std::mutex> lock(mu_);
  Slot& s = slots_[size_t(task.slot)];
  if (error && !s.error) s.error = error;
  const bool last = --s.remaining == 0;
  if (last && stager_ != nullptr && !s.error) {
    // Only this thread touches the finished slot until `done` is set, so the upload runs without the lock.
    lock.unlock();
    std::exception_ptr upload_error;
    try {
      stager_->upload(task.slot, s.images, s.labels, s.dev_images, s.dev_labels);
    } catch (...) {
      upload_error = std::current_exception();
    }
    lock.lock();
    if (upload_error) s.error = upload_error;
  }
  if (last) s.done = true;
  --in_flight_;
  lock.unlock();
  if (last) ready_cv_.notify_all();
  idle_cv_.notify_all();
}

void DataLoader::load_sample(int64_t index, uint64_t epoch, void* dst, int64_t* label, int64_t* final_index) {
  const Dataset& ds = *dataset_;
  const int64_t n = ds.size();
  // A bad sample is replaced by the next index (wrapping): deterministic, and batch shapes stay fixed.
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = (index + k) % n;
    if (is_known_bad(i)) continue;
    std::string reason;
    try {
      const RawSample raw = ds.read(i);
      const SampleRng rng(config_.seed, epoch, i);
      if (raw.pixels.empty()) {
        transform_encoded(raw.encoded, ds.sample_name(i), config_.transform, rng, config_.dtype, dst);
      } else {
        transform_pixels(raw.pixels, config_.transform, rng, config_.dtype, dst);
      }
      *label = ds.label(i);
      *final_index = i;
      return;
    } catch (const Error& e) {
      reason = e.what();
    } catch (const cv::Exception& e) {
      reason = str_cat(ds.sample_name(i), ": OpenCV: ", e.what());
    } catch (const std::bad_alloc&) {
      reason = str_cat(ds.sample_name(i), ": out of memory while decoding");
    }
    record_bad(i, reason);
  }
  throw Error(str_cat("data loader: all ", n, " samples are bad"));
}

bool DataLoader::is_known_bad(int64_t index) const {
  std::lock_guard<std::mutex> lock(bad_mu_);
  return bad_.count(index) != 0;
}

void DataLoader::record_bad(int64_t index, const std::string& reason) {
  const std::string name = dataset_->sample_name(index);
  const int64_t n = dataset_->size();
  const int64_t allowed = bad_samples_allowed(config_.max_bad_fraction, n);
  // The count, the line and the decision are made together, so the error names the sample that crossed the budget.
  std::lock_guard<std::mutex> lock(bad_mu_);
  if (!bad_.insert(index).second) return;
  const int64_t count = int64_t(bad_.size());
  std::cerr << "data: skipping bad sample " << index << " (" << name << "): " << user_message(reason) << "\n";
  if (count > allowed) {
    throw Error(str_cat("data loader: ", count, " of ", n, " samples are bad, more than the ", allowed,
                        " that max_bad_fraction ", config_.max_bad_fraction, " allows; sample ", index, " (", name,
                        ") crossed it: ", reason));
  }
}

int64_t bad_samples_allowed(double max_bad_fraction, int64_t size) {
  if (max_bad_fraction <= 0) return 0;
  // At least one: a small data set (under 1 / max_bad_fraction samples) still survives a single bad file.
  return std::max<int64_t>(1, int64_t(max_bad_fraction * double(size)));
}

}  // namespace cnn::data
