// dwconv-ladder: the teaching ladder of depthwise forward kernels (teach/dwconv/) measured rung by rung on 3x3, 7x7
// and 31x31 filters, each checked against the FP64 reference, with the roofline quantities that explain it and the
// production kernels and cuDNN at the end (--device gpu), or the CPU pair and the backward examples (--device cpu).
// Walkthrough and numbers: docs/tutorial/dwconv.md; the roofline plot: teach/dwconv/plot_roofline.sh.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "apps/dwconv-ladder/ladder_modes.h"
#include "core/error.h"

namespace {

constexpr const char* kGpuMap = "64x64x64x128";  // RepLKNet's stage-1 map at batch 64: fills the H200
constexpr const char* kCpuMap = "2x56x56x128";   // ConvNeXt-sized stage-1 map, small enough for the naive loops

int run(int argc, char** argv) {
  CLI::App app{"dwconv-ladder: the depthwise-convolution teaching ladder, rung by rung"};
  std::string device = "gpu", map, filters = "3,7,31";
  cnn::ladder::LadderOptions opts;
  app.add_option("--device", device, "gpu: the six GPU rungs, production and cuDNN; cpu: the CPU pair")
      ->capture_default_str();
  app.add_option("--map", map,
                 cnn::str_cat("feature map NxHxWxC (default ", kGpuMap, " on gpu, ", kCpuMap, " on cpu)"));
  app.add_option("--filters", filters, "comma-separated odd square filter sizes")->capture_default_str();
  app.add_option("--reps", opts.reps, "timed runs per rung at most (the median is reported)")
      ->capture_default_str()
      ->check(CLI::Range(3, 1000));
  app.add_option("--budget-ms", opts.budget_ms, "time a rung's timed runs may take before fewer reps are used")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 60000.0));
  app.add_flag("!--no-cudnn", opts.cudnn, "skip the cuDNN rows");
  app.add_option("--out", opts.out_csv, "CSV file for every row (written to a temporary name, then renamed)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  CNN_CHECK(device == "gpu" || device == "cpu", "--device: expected gpu or cpu, got '", device, "'");
  opts.gpu = device == "gpu";
  const std::vector<cnn::bench::MapShape> maps =
      cnn::bench::parse_maps(map.empty() ? (opts.gpu ? kGpuMap : kCpuMap) : map);
  CNN_CHECK(maps.size() == 1, "--map: expected one NxHxWxC map, got ", maps.size());
  opts.map = maps[0];
  opts.filters = cnn::bench::parse_filters(filters);
  std::vector<cnn::ladder::LadderRow> rows;
  if (opts.gpu)
    cnn::ladder::run_gpu_ladder(opts, rows);
  else
    cnn::ladder::run_cpu_ladder(opts, rows);
  if (!opts.out_csv.empty()) {
    cnn::ladder::write_csv(opts.out_csv, rows);
    std::cout << "csv: " << opts.out_csv << '\n';
  }
  int failed = 0;
  for (const auto& r : rows) failed += r.checked && r.max_err_ratio > 1.0;
  std::cout << "summary: " << rows.size() << " rows, " << failed << " failed the FP64 check\n";
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "dwconv-ladder: " << e.what() << '\n';
    return 1;
  }
}
