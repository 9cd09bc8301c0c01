// cnn-compare and cnn-plot: the CPU emulation of hybrid accumulation against its reference (bit for bit), the arms,
// the verdict rule, and whole CPU comparisons run as subprocesses (fp32 vs fp32 identical, report + plot, resume,
// a tampered recipe, --plot-only, early errors and inputs read by type); on a GPU, the AMP arms on the FP16 kernels.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "apps/cnn-compare/arms.h"
#include "apps/cnn-compare/bfc_emulation.h"
#include "apps/cnn-compare/report.h"
#include "core/dtype.h"
#include "tests/support/numeric.h"
#include "tests/train/train_test_util.h"

namespace cnn::test {
namespace {

namespace fs = std::filesystem;
using dwconv::DwconvParams;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// FP16 values of normal and subnormal magnitude (dY is scaled like a loss-scaled gradient), as Half and as float.
void fp16_data(int64_t n, double scale, uint32_t seed, std::vector<Half>& h, std::vector<float>& f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  h.clear();
  f.clear();
  for (int64_t i = 0; i < n; ++i) {
    h.emplace_back(float(dist(rng) * scale));
    f.push_back(float(h.back()));
  }
}

DwconvParams params(int n, int ih, int iw, int c, int fh, int fw, int stride, int pt, int pb, int pl, int pr) {
  DwconvParams p;
  p.n = n, p.ih = ih, p.iw = iw, p.c = c, p.fh = fh, p.fw = fw, p.stride_h = p.stride_w = stride;
  p.pad_top = pt, p.pad_bottom = pb, p.pad_left = pl, p.pad_right = pr;
  return p;
}

// Awkward shapes: odd extents, C not a multiple of 8, rows longer than one 32-column HA run, stride 2 with
// asymmetric padding, a filter larger than the image, 1x1, and 51x5 / 5x51.
TEST(CompareEmulation, HybridAccumulationMatchesTheReferenceBitForBit) {
  const std::vector<DwconvParams> shapes = {
      params(2, 17, 34, 72, 7, 7, 1, 3, 3, 3, 3),   params(1, 9, 70, 5, 3, 3, 1, 1, 1, 1, 1),
      params(3, 16, 16, 24, 5, 5, 2, 1, 2, 2, 1),   params(1, 9, 9, 8, 31, 31, 1, 15, 15, 15, 15),
      params(2, 13, 11, 3, 1, 1, 1, 0, 0, 0, 0),    params(1, 12, 66, 4, 5, 51, 1, 2, 2, 25, 25),
      params(1, 60, 10, 6, 51, 5, 1, 25, 25, 2, 2)};
  uint32_t seed = 7;
  for (const DwconvParams& p : shapes) {
    std::vector<Half> xh, dyh;
    std::vector<float> xf, dyf;
    fp16_data(p.x_elems(), 1.0, seed++, xh, xf);
    fp16_data(p.y_elems(), 64.0, seed++, dyh, dyf);  // partials reach the FP16 rounding of large sums
    std::vector<float> want(size_t(p.w_elems())), got(size_t(p.w_elems()));
    dwconv::dwconv_backward_filter_reference_f16(xh.data(), dyh.data(), want.data(), p, dwconv::BfcAccum::ha);
    compare::bfc_ha_emulated(xf.data(), dyf.data(), got.data(), p);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(std::memcmp(&want[i], &got[i], sizeof(float)), 0)
          << p.str() << " seed " << seed - 2 << " index " << i << ": reference " << want[i] << ", got " << got[i];
  }
}

// Partials beyond FP16 range saturate to infinity in both (inf - inf sums give the same NaN): what the loss scaler
// detects as an overflow.
TEST(CompareEmulation, OverflowGivesInfinityAsTheReference) {
  const DwconvParams p = params(1, 4, 40, 2, 3, 3, 1, 1, 1, 1, 1);
  std::vector<Half> xh, dyh;
  std::vector<float> xf, dyf;
  fp16_data(p.x_elems(), 100.0, 1, xh, xf);
  fp16_data(p.y_elems(), 3000.0, 2, dyh, dyf);
  std::vector<float> want(size_t(p.w_elems())), got(size_t(p.w_elems()));
  dwconv::dwconv_backward_filter_reference_f16(xh.data(), dyh.data(), want.data(), p, dwconv::BfcAccum::ha);
  compare::bfc_ha_emulated(xf.data(), dyf.data(), got.data(), p);
  int non_finite = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    non_finite += std::isfinite(want[i]) ? 0 : 1;
    ASSERT_EQ(std::memcmp(&want[i], &got[i], sizeof(float)), 0) << "index " << i << ": " << want[i] << " vs " << got[i];
  }
  EXPECT_GT(non_finite, 0) << "the data should overflow FP16 partials";
}

TEST(CompareArms, ParsesModesRepeatsAndReferences) {
  const std::vector<compare::Arm> a = compare::parse_arms("fp32,amp-fp32,amp-ha");
  ASSERT_EQ(a.size(), 3u);
  EXPECT_TRUE(a[2].amp && a[2].accum == dwconv::BfcAccum::ha);
  EXPECT_EQ(compare::reference_arm(0, a), -1);
  EXPECT_EQ(compare::reference_arm(1, a), 0);
  EXPECT_EQ(compare::reference_arm(2, a), 1);
  const std::vector<compare::Arm> b = compare::parse_arms("fp32,fp32");
  EXPECT_EQ(b[1].name, "fp32-2");
  EXPECT_EQ(compare::reference_arm(1, b), 0);
  EXPECT_EQ(compare::arms_text(b), "fp32,fp32");
  const std::vector<compare::Arm> c = compare::parse_arms("amp-ha,fp32");
  EXPECT_EQ(compare::reference_arm(0, c), 1);
  for (const char* bad : {"amp-ha", "fp16,amp-ha", "", "amp-fp32,,amp-ha"})
    EXPECT_THROW(compare::parse_arms(bad), Error) << bad;
}

TEST(CompareReport, VerdictAppliesItsRule) {
  compare::ArmSummary ref, arm;
  ref.finished = arm.finished = true;
  ref.steps = arm.steps = 100;
  ref.final_top1 = 0.900, ref.final_loss = 0.30;
  arm.final_top1 = 0.898, arm.final_loss = 0.31;
  EXPECT_EQ(compare::verdict("amp-ha", arm, "amp-fp32", ref, 0.3).rfind("PASS", 0), 0u);
  arm.final_top1 = 0.896;  // 0.4 points below
  EXPECT_EQ(compare::verdict("amp-ha", arm, "amp-fp32", ref, 0.3).rfind("FAIL", 0), 0u);
  arm.final_top1 = 0.9, arm.final_loss = 0.34;  // 13% above
  EXPECT_EQ(compare::verdict("amp-ha", arm, "amp-fp32", ref, 0.3).rfind("FAIL", 0), 0u);
  arm.final_loss = 0.3, arm.all_finite = false;
  EXPECT_EQ(compare::verdict("amp-ha", arm, "amp-fp32", ref, 0.3).rfind("FAIL", 0), 0u);
  arm.all_finite = true, arm.finished = false;
  EXPECT_EQ(compare::verdict("amp-ha", arm, "amp-fp32", ref, 0.3).rfind("INCOMPLETE", 0), 0u);
}

// A tiny CPU comparison: ConvMixer dim 16, 7x7, 2 epochs of 256 images, evaluation every 4 steps.
std::string tiny_compare_flags(const std::string& dir) {
  return "--model " + write_tiny_convmixer(dir) +
         " --device cpu --train-samples 256 --val-samples 128 --batch-size 64 --epochs 2 --workers 1 "
         "--eval-interval 4 --lr 0.005";
}

std::vector<nlohmann::json> arm_records(const std::string& dir, const std::string& arm) {
  return read_metrics(dir + "/" + arm + "/metrics.jsonl");
}

TEST(CompareRun, Fp32AgainstFp32IsIdenticalAcrossAResume) {
  const std::string tmp = scratch_dir(), dir = tmp + "/cmp";
  RunResult r = run_binary(CNN_COMPARE_BIN, tiny_compare_flags(tmp) + " --arms fp32,fp32 --out " + dir +
                                                " --stop-after 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(read_text(dir + "/report.md").find("INCOMPLETE"), std::string::npos);
  // The recorded recipe is checked against the checkpoint's: an edit of compare.json is refused, naming the key.
  const std::string spec = read_text(dir + "/compare.json");
  const size_t at = spec.find("\\nseed: ");
  ASSERT_NE(at, std::string::npos) << spec;
  std::string edited = spec;
  edited.insert(at + std::strlen("\\nseed: "), "7");
  std::ofstream(dir + "/compare.json") << edited;
  r = run_binary(CNN_COMPARE_BIN, "--resume " + dir);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("compare.json: seed is 70, but the checkpoint"), std::string::npos) << r.output;
  std::ofstream(dir + "/compare.json") << spec;
  r = run_binary(CNN_COMPARE_BIN, "--resume " + dir);
  ASSERT_EQ(r.status, 0) << r.output;
  const auto a = arm_records(dir, "fp32"), b = arm_records(dir, "fp32-2");
  const auto la = train_losses(a), lb = train_losses(b);
  ASSERT_EQ(la.size(), 8u);  // 2 epochs x 4 steps
  ASSERT_EQ(la, lb) << "the two fp32 arms must produce the same losses bit for bit";
  EXPECT_EQ(eval_results(a), eval_results(b));
  int probes = 0;
  for (const auto& rec : a)
    for (const char* k : {"grad_diff_first", "grad_diff_mid", "grad_diff_last"})
      if (rec.contains(k)) {
        EXPECT_EQ(rec[k].get<double>(), 0.0) << k;
        ++probes;
      }
  EXPECT_GT(probes, 0);
  const std::string report = read_text(dir + "/report.md");
  EXPECT_NE(report.find("- fp32-2 vs fp32: 0 at step"), std::string::npos) << report;
  EXPECT_NE(report.find("PASS fp32-2 vs fp32"), std::string::npos) << report;
}

TEST(CompareRun, TinyCpuRunWritesMetricsCsvReportAndPlot) {
  const std::string tmp = scratch_dir(), dir = tmp + "/cmp";
  RunResult r = run_binary(CNN_COMPARE_BIN, tiny_compare_flags(tmp) + " --arms fp32,amp-fp32,amp-ha --out " + dir);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("verdict: "), std::string::npos) << r.output;
  for (const char* arm : {"fp32", "amp-fp32", "amp-ha"}) {
    const auto recs = arm_records(dir, arm);
    bool scale = false, probed = false, top1 = false;
    for (const auto& rec : recs) {
      if (rec.at("type") != "train") continue;
      scale = scale || rec.contains("loss_scale");
      top1 = top1 || rec.contains("top1");
      if (!rec.contains("grad_diff_first")) continue;
      probed = true;
      const double d = rec["grad_diff_first"].get<double>();
      if (std::string(arm) == "amp-ha") {
        // FP16 runs of 32 products: relative error far above FP32's ~1e-7, far below O(1).
        EXPECT_GT(d, 1e-6) << arm;
        EXPECT_LT(d, 5e-2) << arm;
      } else {
        EXPECT_EQ(d, 0.0) << arm;
      }
    }
    EXPECT_TRUE(probed && top1) << arm;
    EXPECT_EQ(scale, std::string(arm) != "fp32") << arm << ": the emulated AMP arms scale the loss";
  }
  const std::string csv = read_text(dir + "/combined.csv");
  EXPECT_EQ(csv.rfind("step,fp32.loss,fp32.top1,fp32.lr,fp32.loss_scale,fp32.grad_diff_first", 0), 0u) << csv;
  const std::string report = read_text(dir + "/report.md");
  for (const char* part : {"## Largest loss gap", "## Verdict", "amp-ha vs amp-fp32", "amp-fp32 vs fp32",
                           "rule: PASS when", "ms/step", "curves.png"})
    EXPECT_NE(report.find(part), std::string::npos) << part << "\n" << report;
  const std::string png = read_text(dir + "/curves.png");
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
  // --plot-only redraws from the metrics alone.
  fs::remove(dir + "/curves.png");
  fs::remove(dir + "/report.md");
  r = run_binary(CNN_COMPARE_BIN, "--plot-only " + dir);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir + "/curves.png") && fs::exists(dir + "/report.md"));
  // cnn-plot draws any cnn-train run folders with the same code.
  r = run_binary(CNN_PLOT_BIN, dir + "/fp32 " + dir + "/amp-ha --out " + tmp + "/runs.png");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_text(tmp + "/runs.png").substr(1, 3), "PNG");
}

TEST(CompareCli, BadInputsFailBeforeTraining) {
  const std::string tmp = scratch_dir(), model = write_tiny_convmixer(tmp);
  const std::string base = "--model " + model + " --device cpu";
  struct Case {
    std::string args, message;
    int status;
  };
  fs::create_directories(tmp + "/full");
  std::ofstream(tmp + "/full/x") << "x";
  // Inputs read by type: a folder or a FIFO where the spec belongs (a FIFO would block the read).
  fs::create_directories(tmp + "/specdir/compare.json");
  fs::create_directories(tmp + "/fifo");
  ASSERT_EQ(::mkfifo((tmp + "/fifo/compare.json").c_str(), 0600), 0);
  const std::vector<Case> cases = {
      {"--config " + tmp + "/missing.yaml", "missing.yaml", 1},
      {base + " --no-such-flag", "no-such-flag", 2},
      {base + " --arms fp32,fp16", "--arms: expected a comma-separated list", 1},
      {base + " --arms amp-ha", "--arms: expected at least two arms", 1},
      {base + " --amp", "--amp: set by each arm", 1},
      {base + " --bfc-accum ha", "--bfc-accum: set by each arm", 1},
      {base + " --log-interval 5", "--log-interval: cnn-compare records every step", 1},
      {base + " --synthetic", "--synthetic: a benchmark mode", 1},
      {base + " --probe-interval -1", "--probe-interval", 1},
      {base + " --batch-size 0", "--batch-size", 1},
      {base + " --out " + tmp + "/full", "exists and is not empty", 1},
      {"--epochs 2", "--config: no recipe given", 1},
      {"--resume " + tmp + "/nothing", "compare.json: cannot open", 1},
      {"--resume " + tmp + "/full --lr 0.1", "--resume: continues the comparison as recorded; --lr", 1},
      {"--plot-only " + tmp + "/full", "compare.json: cannot open", 1},
      {"--plot-only " + tmp + "/full --arms fp32,amp-ha", "--plot-only: takes only the comparison folder", 1},
      {"--resume " + tmp + "/specdir", "comparison spec: '" + tmp + "/specdir/compare.json' is a folder", 1},
      {"--plot-only " + tmp + "/fifo", "comparison spec: '" + tmp + "/fifo/compare.json' is a FIFO", 1},
  };
  for (const Case& c : cases) {
    const RunResult r = run_binary(CNN_COMPARE_BIN, c.args);
    EXPECT_EQ(r.status, c.status) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("cnn-compare: arm "), std::string::npos) << c.args << ": training started\n" << r.output;
  }
  const RunResult p = run_binary(CNN_PLOT_BIN, tmp + "/full");
  EXPECT_EQ(p.status, 1) << p.output;
  EXPECT_NE(p.output.find("has no metrics.jsonl"), std::string::npos) << p.output;
}

}  // namespace
}  // namespace cnn::test

namespace cnn::test {
namespace {

// On a GPU the AMP arms are the real FP16 kernels: HA's probes differ from FP32 accumulation, amp-fp32's do not, and
// both record the loss scale.
TEST(CompareGpu, AmpArmsProbeTheFp16Kernels) {
  CNN_REQUIRE_GPU();
  const std::string tmp = scratch_dir(), dir = tmp + "/cmp";
  const RunResult r = run_binary(CNN_COMPARE_BIN, "--model " + write_tiny_convnext(tmp) +
                                                      " --device cuda --train-samples 512 --val-samples 256 "
                                                      "--batch-size 64 --epochs 1 --workers 2 --out " + dir);
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* arm : {"amp-fp32", "amp-ha"}) {
    int probes = 0;
    for (const auto& rec : read_metrics(dir + "/" + arm + "/metrics.jsonl")) {
      if (rec.at("type") != "train") continue;
      EXPECT_TRUE(rec.contains("loss_scale")) << arm;
      if (!rec.contains("grad_diff_first")) continue;
      ++probes;
      const double d = rec["grad_diff_first"].get<double>();
      if (std::string(arm) == "amp-ha") {
        EXPECT_GT(d, 0.0) << arm;
        EXPECT_LT(d, 5e-2) << arm;  // FP16 runs of 32 products: far below O(1)
      } else {
        EXPECT_EQ(d, 0.0) << arm;
      }
    }
    EXPECT_EQ(probes, 8) << arm;  // 512 / 64 steps, every one probed
  }
}

}  // namespace
}  // namespace cnn::test
