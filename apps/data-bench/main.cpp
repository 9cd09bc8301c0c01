// data-bench: images/s of the data pipeline (read, TurboJPEG decode, augmentation, normalization, batching and,
// with --device cuda, the pinned host-to-device copy) on an ImageNet-style tree or a generated tree of real JPEGs.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "core/device.h"
#include "core/error.h"
#include "core/error_text.h"
#include "data/data_bench.h"
#include "data/dataset.h"

namespace {

namespace fs = std::filesystem;

struct Options {
  std::string data_dir;
  std::string split = "train";
  int64_t synthetic_jpeg = 0;
  int synthetic_width = 500;
  int synthetic_height = 375;
  int synthetic_quality = 90;
  std::string keep_dir;
  int workers = int(std::max(1u, std::thread::hardware_concurrency()));
  int prefetch = 4;
  int64_t batch_size = 256;
  int image_size = 224;
  double seconds = 10;
  std::string augment = "train";
  std::string dtype = "f32";
  std::string device = "cpu";
  uint64_t seed = 0;
};

// Removes the generated tree on every exit path, unless it was asked to be kept.
struct TempTree {
  fs::path path;
  bool keep = false;
  ~TempTree() {
    std::error_code ec;
    if (!path.empty() && !keep) fs::remove_all(path, ec);
  }
};

void run(const Options& o) {
  using Clock = std::chrono::steady_clock;
  TempTree tree;
  std::string root = o.data_dir;
  if (o.synthetic_jpeg > 0) {
    tree.keep = !o.keep_dir.empty();
    tree.path = tree.keep ? fs::path(o.keep_dir)
                          : fs::temp_directory_path() / ("cnn-data-bench-" + std::to_string(::getpid()));
    cnn::data::SyntheticJpegTree spec;
    spec.images = o.synthetic_jpeg;
    spec.classes = int(std::min<int64_t>(100, o.synthetic_jpeg));
    spec.width = o.synthetic_width;
    spec.height = o.synthetic_height;
    spec.quality = o.synthetic_quality;
    spec.seed = o.seed;
    const auto t0 = Clock::now();
    const int64_t bytes = cnn::data::write_synthetic_jpeg_tree(tree.path.string(), spec);
    std::printf("generated %lld JPEGs of %dx%d (quality %d, mean %.1f KiB) in %s in %.1f s\n",
                (long long)spec.images, spec.width, spec.height, spec.quality, double(bytes) / 1024.0 / double(spec.images),
                tree.path.c_str(), std::chrono::duration<double>(Clock::now() - t0).count());
    root = tree.path.string();
  }
  const auto dataset = std::make_shared<cnn::data::ImageFolderDataset>(root, o.split);
  cnn::data::LoaderConfig c;
  c.batch_size = o.batch_size;
  c.workers = o.workers;
  c.prefetch = o.prefetch;
  c.seed = o.seed;
  c.transform.augment = cnn::data::parse_augment(o.augment);
  c.transform.image_size = o.image_size;
  c.dtype = cnn::dtype_from_name(o.dtype);
  c.device = cnn::Device::parse(o.device);
  std::printf("data-bench: %lld images, %d classes in %s/%s; workers %d, batch %lld, prefetch %d, image %d, "
              "augment %s, %s on %s, hardware threads %u\n",
              (long long)dataset->size(), dataset->num_classes(), root.c_str(), o.split.c_str(), c.workers,
              (long long)c.batch_size, c.prefetch, c.transform.image_size, o.augment.c_str(), o.dtype.c_str(),
              c.device.str().c_str(), std::thread::hardware_concurrency());
  const cnn::data::DataBenchResult r = cnn::data::run_data_bench(dataset, c, o.seconds);
  std::printf("first batch after %.3f s\n", r.first_batch_seconds);
  std::printf("%lld images in %.2f s: %.1f images/s (%.1f per worker), bad samples %lld\n", (long long)r.images,
              r.seconds, r.images_per_second, r.images_per_second / c.workers, (long long)r.bad_samples);
  // CPU time per image does not depend on how many cores other processes leave free: the per-core rate.
  std::printf("process CPU %.2f s (%.2f cores busy): %.3f ms CPU per image, %.1f images/s per busy core\n",
              r.cpu_seconds, r.cpu_seconds / r.seconds, 1e3 * r.cpu_seconds / double(r.images),
              double(r.images) / r.cpu_seconds);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Measure the data pipeline's throughput in images/s"};
  auto* dir = app.add_option("--data-dir", o.data_dir, "ImageNet-style root holding <split>/<wnid>/*.JPEG");
  auto* syn = app.add_option("--synthetic-jpeg", o.synthetic_jpeg, "generate this many JPEGs in a temporary tree")
                  ->check(CLI::PositiveNumber);
  dir->excludes(syn);
  app.add_option("--synthetic-width", o.synthetic_width, "width of generated images")->check(CLI::Range(16, 8192));
  app.add_option("--synthetic-height", o.synthetic_height, "height of generated images")->check(CLI::Range(16, 8192));
  app.add_option("--synthetic-quality", o.synthetic_quality, "JPEG quality of generated images")
      ->check(CLI::Range(1, 100));
  app.add_option("--keep", o.keep_dir, "write the generated tree here and keep it");
  app.add_option("--split", o.split, "split folder under --data-dir");
  app.add_option("--workers", o.workers, "loader threads")->check(CLI::Range(1, 1024));
  app.add_option("--prefetch", o.prefetch, "batches built ahead")->check(CLI::Range(1, 1024));
  app.add_option("--batch-size", o.batch_size, "images per batch")->check(CLI::Range(int64_t(1), int64_t(1) << 16));
  app.add_option("--image-size", o.image_size, "output height and width")->check(CLI::Range(8, 4096));
  app.add_option("--seconds", o.seconds, "measured time after the first batch")->check(CLI::PositiveNumber);
  app.add_option("--augment", o.augment, "train (RandomResizedCrop + flip), eval (resize + center crop) or none")
      ->check(CLI::IsMember({"train", "eval", "none"}));
  app.add_option("--dtype", o.dtype, "batch dtype")->check(CLI::IsMember({"f32", "f16"}));
  app.add_option("--device", o.device, "cpu (host batches) or cuda[:N] (pinned staging + async copy)");
  app.add_option("--seed", o.seed, "seed of the order, the augmentation and generated images");
  CLI11_PARSE(app, argc, argv);
  if (o.data_dir.empty() && o.synthetic_jpeg == 0) {
    std::fprintf(stderr, "data-bench: error: give --data-dir DIR or --synthetic-jpeg N\n");
    return 2;
  }
  try {
    run(o);
  } catch (const cnn::Error& e) {
    std::fprintf(stderr, "data-bench: error: %s\n", cnn::user_message(e.what()).c_str());
    return 1;
  }
  return 0;
}
