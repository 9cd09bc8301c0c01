// Data-pipeline benchmark helpers: a generator of ImageNet-like JPEG folder trees (real files, TurboJPEG-encoded)
// and a timed loader run reporting images/s. Used by apps/data-bench and the tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/dataset.h"
#include "data/loader.h"

namespace cnn::data {

struct SyntheticJpegTree {
  int64_t images = 1000;
  int classes = 10;
  int width = 500;  // ImageNet's typical 500x375 (4:3)
  int height = 375;
  int quality = 90;
  uint64_t seed = 0;
};
// Writes <root>/train/c0000 .. c<classes-1>/img_<i>.JPEG (image i in class i % classes): a smooth two-color
// gradient, a few filled shapes and mild pixel noise, so file sizes and decode cost resemble photographs.
// Returns the total bytes written.
int64_t write_synthetic_jpeg_tree(const std::string& root, const SyntheticJpegTree& spec);

struct DataBenchResult {
  int64_t images = 0;              // images delivered after the first batch
  double seconds = 0;              // time for them
  double images_per_second = 0;
  double first_batch_seconds = 0;  // start-up latency (epoch start to first batch)
  double cpu_seconds = 0;          // process CPU time (user + system, all threads) over the measured window
  int64_t bad_samples = 0;
};
// Pulls batches (starting a new epoch when one ends) for about `seconds` after the first batch; device batches
// are synchronized at the end, so copies are included.
DataBenchResult run_data_bench(std::shared_ptr<const Dataset> dataset, const LoaderConfig& config, double seconds);

}  // namespace cnn::data
