// Synthetic JPEG trees (OpenCV drawing + TurboJPEG encoding) and the timed loader loop.
#include "data/data_bench.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/context.h"
#include "core/error.h"
#include "core/philox.h"
#include "data/image_decode.h"
#include "data/transforms.h"
#include "data/opencv.h"

namespace cnn::data {

namespace {

namespace fs = std::filesystem;

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// Word stream of one image: Philox blocks of counter (image, block) under the tree's key.
class Words {
 public:
  Words(uint64_t key, int64_t image) : key_(key), image_(image) {}
  uint32_t next() {
    if (used_ == 4) {
      cur_ = rng::philox4x32_10(rng::Philox4{{uint32_t(image_), uint32_t(uint64_t(image_) >> 32), block_++, 7u}},
                                uint32_t(key_), uint32_t(key_ >> 32));
      used_ = 0;
    }
    return cur_.v[used_++];
  }
  int below(int n) { return int(SampleRng::below(next(), n)); }

 private:
  uint64_t key_;
  int64_t image_;
  uint32_t block_ = 0;
  rng::Philox4 cur_{};
  int used_ = 4;
};

cv::Mat synthetic_photo(const SyntheticJpegTree& spec, uint64_t key, int64_t image) {
  Words w(key, image);
  cv::Mat img(spec.height, spec.width, CV_8UC3);
  const cv::Vec3f a(float(w.below(256)), float(w.below(256)), float(w.below(256)));
  const cv::Vec3f b(float(w.below(256)), float(w.below(256)), float(w.below(256)));
  for (int y = 0; y < img.rows; ++y) {
    const float t = float(y) / float(std::max(1, img.rows - 1));
    const cv::Vec3f c = a * (1.0f - t) + b * t;
    img.row(y).setTo(cv::Scalar(c[0], c[1], c[2]));
  }
  const int shapes = 4 + w.below(6);
  for (int s = 0; s < shapes; ++s) {
    const cv::Scalar color(w.below(256), w.below(256), w.below(256));
    const cv::Point center(w.below(spec.width), w.below(spec.height));
    const cv::Size axes(8 + w.below(std::max(1, spec.width / 3)), 8 + w.below(std::max(1, spec.height / 3)));
    cv::ellipse(img, center, axes, w.below(180), 0, 360, color, cv::FILLED, cv::LINE_AA);
  }
  // Texture: +-12 levels of noise, the high-frequency content that makes photographs cost what they cost.
  for (int y = 0; y < img.rows; ++y) {
    uint8_t* p = img.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols * 3; ++x) p[x] = cv::saturate_cast<uint8_t>(int(p[x]) + int(w.next() % 25) - 12);
  }
  return img;
}

std::string class_dir(int c) {
  char name[16];
  std::snprintf(name, sizeof(name), "c%04d", c);
  return name;
}

}  // namespace

int64_t write_synthetic_jpeg_tree(const std::string& root, const SyntheticJpegTree& spec) {
  CNN_CHECK(spec.images >= 1 && spec.classes >= 1, "synthetic jpeg tree: need images >= 1 and classes >= 1, got ",
            spec.images, " and ", spec.classes);
  CNN_CHECK(spec.width >= 8 && spec.height >= 8, "synthetic jpeg tree: images must be at least 8x8, got ",
            spec.width, "x", spec.height);
  const uint64_t key = derive_key(spec.seed, kSyntheticDomain);
  int64_t bytes = 0;
  for (int c = 0; c < spec.classes; ++c) {
    std::error_code ec;
    const fs::path dir = fs::path(root) / "train" / class_dir(c);
    fs::create_directories(dir, ec);
    CNN_CHECK(!ec, "synthetic jpeg tree: cannot create ", dir.string(), " (", ec.message(), ")");
  }
  for (int64_t i = 0; i < spec.images; ++i) {
    const fs::path path = fs::path(root) / "train" / class_dir(int(i % spec.classes)) / str_cat("img_", i, ".JPEG");
    const std::vector<uint8_t> jpeg = encode_jpeg(synthetic_photo(spec, key, i), JpegPixels::rgb, spec.quality);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(jpeg.data()), std::streamsize(jpeg.size()));
    CNN_CHECK(bool(out), "synthetic jpeg tree: cannot write ", path.string());
    bytes += int64_t(jpeg.size());
  }
  return bytes;
}

DataBenchResult run_data_bench(std::shared_ptr<const Dataset> dataset, const LoaderConfig& config, double seconds) {
  using Clock = std::chrono::steady_clock;
  DataLoader loader(std::move(dataset), config);
  CNN_CHECK(loader.batches_per_epoch() >= 1, "data bench: an epoch has no batch (", loader.samples_per_epoch(),
            " samples per rank, batch size ", config.batch_size, ")");
  DataBenchResult r;
  int64_t epoch = 0;
  loader.start_epoch(epoch);
  const auto t0 = Clock::now();
  auto pull = [&]() -> Batch {
    std::optional<Batch> b = loader.next();
    if (!b) {
      loader.start_epoch(++epoch);
      b = loader.next();
    }
    return std::move(*b);
  };
  pull();
  const auto t1 = Clock::now();
  const double cpu0 = process_cpu_seconds();
  r.first_batch_seconds = std::chrono::duration<double>(t1 - t0).count();
  while (std::chrono::duration<double>(Clock::now() - t1).count() < seconds) r.images += pull().labels.numel();
  if (config.device.is_cuda()) Context::get(config.device).synchronize();
  r.seconds = std::chrono::duration<double>(Clock::now() - t1).count();
  r.cpu_seconds = process_cpu_seconds() - cpu0;
  r.images_per_second = double(r.images) / r.seconds;
  r.bad_samples = loader.bad_samples();
  return r;
}

}  // namespace cnn::data
