// dwconv-bench's host-side logic on the CPU: option parsing and its one-line errors, the per-op summary (geometric
// mean, minimum, points slower than cuDNN) and the CSV writer. The GPU side of the benchmark runs on the H200.
// (Named *_cuda_test: the options header pulls in the CUDA kernels' declarations.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/dwconv-bench/bench_options.h"
#include "apps/dwconv-bench/report.h"
#include "core/error.h"
#include "tests/support/scratch_dir.h"

namespace cnn::bench {
namespace {

// Parses a command line ("dwconv-bench" prepended); returns the error message of a cnn::Error, or "" on success.
std::string parse(std::vector<std::string> args, BenchOptions& opts, bool* proceed = nullptr, int* code = nullptr) {
  args.insert(args.begin(), "dwconv-bench");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  int exit_code = 0;
  try {
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    const bool ok = parse_bench_options(static_cast<int>(argv.size()), argv.data(), opts, exit_code);
    testing::internal::GetCapturedStdout();
    testing::internal::GetCapturedStderr();
    if (proceed) *proceed = ok;
    if (code) *code = exit_code;
    return "";
  } catch (const Error& e) {
    testing::internal::GetCapturedStdout();
    testing::internal::GetCapturedStderr();
    return e.what();
  }
}

TEST(DwconvBenchOptions, DefaultsAreThePapersSweep) {
  BenchOptions o;
  ASSERT_EQ(parse({}, o), "");
  EXPECT_EQ(o.ops.size(), 3u);
  ASSERT_EQ(o.maps.size(), 3u);
  EXPECT_EQ(o.maps[0].str(), "128x128x128x128");
  std::string filters;
  for (const FilterShape& f : o.filters) filters += f.str() + ",";
  EXPECT_EQ(filters, "3,5,7,9,13,17,31,51,");
  EXPECT_EQ(o.reps, 20);
  EXPECT_EQ(o.warmup, 5);
  EXPECT_TRUE(o.cudnn && o.cudnn_legacy && o.check);
  EXPECT_FALSE(o.cudnn_engines);
  EXPECT_EQ(o.engine_probe_budget_ms, 20000);
  EXPECT_EQ(o.stride, 1);
}

// --stride S: 'same' padding at stride S on both axes, output ceil(H / S) x ceil(W / S) for every odd filter.
TEST(DwconvBenchOptions, StrideGivesTheOutputExtentOfSamePadding) {
  BenchOptions o;
  ASSERT_EQ(parse({"--stride", "2"}, o), "");
  EXPECT_EQ(o.stride, 2);
  const MapShape m{2, 17, 34, 72};
  for (int f : {1, 3, 7, 51}) {
    const dwconv::DwconvParams p = same_padding_params(m, f, 2);
    EXPECT_EQ(p.stride_h, 2);
    EXPECT_EQ(p.stride_w, 2);
    EXPECT_EQ(p.pad_top + p.pad_bottom, f - 1);
    EXPECT_EQ(p.oh(), 9) << f;   // ceil(17 / 2)
    EXPECT_EQ(p.ow(), 17) << f;  // ceil(34 / 2)
  }
  EXPECT_EQ(same_padding_params(m, 5, 1).oh(), 17);
}

TEST(DwconvBenchOptions, EnginesOptions) {
  BenchOptions o;
  ASSERT_EQ(parse({"--cudnn-engines", "--no-cudnn-legacy", "--cudnn-probe-budget", "3000"}, o), "");
  EXPECT_TRUE(o.cudnn_engines);
  EXPECT_FALSE(o.cudnn_legacy);
  EXPECT_EQ(o.engine_probe_budget_ms, 3000);
  // --no-cudnn-legacy and --cudnn-probe-budget need --cudnn-engines; --cudnn-engines excludes --no-cudnn: CLI11
  // refuses them with a non-zero exit code instead of running.
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--no-cudnn-legacy"},
                                              std::vector<std::string>{"--cudnn-probe-budget", "10"},
                                              std::vector<std::string>{"--cudnn-engines", "--no-cudnn"}}) {
    BenchOptions b;
    bool proceed = true;
    int code = 0;
    EXPECT_EQ(parse(bad, b, &proceed, &code), "");
    EXPECT_FALSE(proceed) << bad[0];
    EXPECT_NE(code, 0) << bad[0];
  }
  BenchOptions b;
  EXPECT_NE(parse({"--cudnn-engines", "--cudnn-probe-budget", "0"}, b).find("--cudnn-probe-budget"),
            std::string::npos);
}

TEST(DwconvBenchOptions, BadValuesNameTheirFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--dtype", "bf16"}, "--dtype"},
      {{"--bfc-accum", "fp16"}, "--bfc-accum"},
      {{"--bfc-accum", "ha"}, "--bfc-accum"},  // ha needs --dtype f16
      {{"--reps", "0"}, "--reps"},
      {{"--warmup", "-1"}, "--warmup"},
      {{"--stride", "0"}, "--stride"},
  };
  for (const auto& [args, flag] : cases) {
    BenchOptions o;
    const std::string err = parse(args, o);
    EXPECT_NE(err.find(flag), std::string::npos) << args[0] << " " << args[1] << ": '" << err << "'";
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(DwconvBenchOptions, ListsAreValidated) {
  EXPECT_EQ(parse_filters("3,5").size(), 2u);
  const std::vector<FilterShape> strips = parse_filters("51x5,5x51,13");
  ASSERT_EQ(strips.size(), 3u);
  EXPECT_TRUE(strips[0].h == 51 && strips[0].w == 5 && strips[0].str() == "51x5");
  EXPECT_TRUE(strips[2].h == 13 && strips[2].w == 13 && strips[2].str() == "13");
  const dwconv::DwconvParams p = same_padding_params(MapShape{2, 17, 34, 249}, strips[1], 1);
  EXPECT_TRUE(p.fh == 5 && p.fw == 51 && p.pad_top == 2 && p.pad_left == 25 && p.oh() == 17 && p.ow() == 34);
  EXPECT_THROW(parse_filters("4"), Error);     // even: 'same' padding needs odd filters
  EXPECT_THROW(parse_filters("51x4"), Error);
  EXPECT_THROW(parse_filters("5x5x5"), Error);
  EXPECT_THROW(parse_filters("3,,5"), Error);  // empty item
  EXPECT_EQ(parse_maps("2x16x16x64")[0].c, 64);
  EXPECT_THROW(parse_maps("2x16x16"), Error);
  EXPECT_THROW(parse_maps("2x16x16x0"), Error);
  EXPECT_EQ(parse_ops("bfc,fwd").size(), 2u);
  EXPECT_THROW(parse_ops("fwd,dgrad"), Error);
}

Row row(const std::string& op, const std::string& map, int f, double ms, double cudnn_ms) {
  Row r;
  r.op = op;
  r.map = map;
  r.filter = std::to_string(f);
  r.ms = ms;
  r.tflops = 1;
  if (cudnn_ms > 0) {
    r.has_cudnn = true;
    r.cudnn_ms = cudnn_ms;
    r.cudnn_algo = "ALGO";
    r.speedup = cudnn_ms / ms;
  }
  return r;
}

TEST(DwconvBenchReport, SummaryGeomeanMinAndSlowerPoints) {
  std::vector<Row> rows = {row("fwd", "A", 3, 1.0, 0.5), row("fwd", "A", 5, 1.0, 8.0), row("bdc", "A", 3, 1.0, 4.0)};
  Row failed = row("fwd", "B", 3, 0, 0);
  failed.error = "boom";
  rows.push_back(failed);
  std::ostringstream os;
  print_summary(os, rows);
  const std::string s = os.str();
  // fwd: speedups 0.5 and 8 -> geomean 2, min 0.5, A/F3 slower; one failed point.
  EXPECT_NE(s.find("summary fwd: 3 points, 1 FAILED, speedup over cuDNN geomean 2.00x, min 0.50x, slower than "
                   "cuDNN: A/F3"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("summary bdc: 1 points, speedup over cuDNN geomean 4.00x, min 4.00x, slower than cuDNN: none"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("summary bfc"), std::string::npos) << s;
}

// A winner that failed the FP64 check: the summary adds the geomean over the fastest candidates that passed.
TEST(DwconvBenchReport, SummaryAddsTheAccurateBaselineWhenAWinnerFailedTheCheck) {
  std::vector<Row> rows = {row("bfc", "A", 9, 1.0, 0.5), row("bfc", "A", 13, 1.0, 2.0)};
  for (Row& r : rows) {
    r.has_cudnn_check = r.has_cudnn_ok = true;
    r.cudnn_ok_algo = r.cudnn_algo;
    r.cudnn_ok_ms = r.cudnn_ms;
    r.speedup_ok = r.speedup;
  }
  std::ostringstream same;
  print_summary(same, rows);
  EXPECT_EQ(same.str().find("passing the FP64 check"), std::string::npos) << same.str();  // nothing differs
  rows[0].cudnn_ok_algo = "SLOWER_OK";
  rows[0].cudnn_ok_ms = 8.0;
  rows[0].speedup_ok = 8.0;
  std::ostringstream os;
  print_summary(os, rows);
  // all: 0.5 and 2 -> geomean 1.00; accurate: 8 and 2 -> geomean 4.00.
  EXPECT_NE(os.str().find("speedup over cuDNN geomean 1.00x, min 0.50x, slower than cuDNN: A/F9; over the fastest "
                          "cuDNN passing the FP64 check (2 points) geomean 4.00x, min 2.00x, slower than cuDNN: none"),
            std::string::npos)
      << os.str();
}

TEST(DwconvBenchReport, CsvIsWrittenWholeWithEmptyFieldsForMissingValues) {
  const std::filesystem::path dir = cnn::test::test_scratch_dir("dwconv_bench_");
  const std::string path = (dir / "out.csv").string();
  Row failed = row("bfc", "A", 7, 0, 0);
  failed.error = "a, \"quoted\" error";
  write_csv(path, {row("fwd", "A", 3, 2.0, 4.0), failed});
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::ifstream f(path);
  std::string header, first, second;
  std::getline(f, header);
  std::getline(f, first);
  std::getline(f, second);
  EXPECT_EQ(header.rfind("op,map,filter,ms,tflops,gbps,cudnn_ms,cudnn_algo,speedup,", 0), 0u) << header;
  EXPECT_EQ(first.rfind("fwd,A,3,2,1,", 0), 0u) << first;
  EXPECT_NE(first.find(",4,ALGO,2,"), std::string::npos) << first;
  EXPECT_NE(header.find(",error,cudnn_ok_ms,cudnn_ok_algo,speedup_ok,stride"), std::string::npos) << header;
  EXPECT_EQ(first.substr(first.size() - 5), ",,,,1") << first;  // no check ran: no accurate baseline; stride 1
  // A failed point keeps its identity and the error (quoted as CSV), every number empty.
  EXPECT_EQ(second.rfind("bfc,A,7,,,,,,,", 0), 0u) << second;
  EXPECT_NE(second.find("\"a, \"\"quoted\"\" error\""), std::string::npos) << second;
  EXPECT_THROW(write_csv((dir / "no/such/dir/out.csv").string(), {}), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cnn::bench
