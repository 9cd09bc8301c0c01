// The dwconv tool: fwd / bdc / bfc on a safetensors file against the FP64 reference (awkward shapes, stride 2,
// asymmetric padding, sizes given or derived), and every error path as one line naming the tensor or flag.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/safetensors.h"
#include "kernels/dwconv/dwconv.h"
#include "tests/support/numeric.h"
#include "tests/tools/tools_test_util.h"

namespace cnn::test {
namespace {

namespace fs = std::filesystem;

Tensor uniform(const Shape& s, uint64_t seed) {
  Tensor t = Tensor::empty(s, DType::f32);
  t.uniform_(seed, 0, -1.0, 1.0);
  return t;
}

std::vector<double> as_f64(const Tensor& t) { return t.to(DType::f64).to_vector<double>(); }

struct Problem {
  dwconv::DwconvParams p;
  Tensor x, w, dy;
};

// x (2, 17, 34, 72), w (7, 5, 72), stride 2, padding (3, 2, 1, 2) -> dy (2, 8, 16, 72).
Problem strided_problem() {
  Problem pr;
  pr.p.n = 2, pr.p.ih = 17, pr.p.iw = 34, pr.p.c = 72, pr.p.fh = 7, pr.p.fw = 5;
  pr.p.stride_h = pr.p.stride_w = 2;
  pr.p.pad_top = 3, pr.p.pad_bottom = 2, pr.p.pad_left = 1, pr.p.pad_right = 2;
  pr.x = uniform({2, 17, 34, 72}, 1);
  pr.w = uniform({7, 5, 72}, 2);
  pr.dy = uniform({2, pr.p.oh(), pr.p.ow(), 72}, 3);
  return pr;
}

// max |got - want| <= 1e-5 * max(1, max |want|): FP32 sums of up to 35 (fwd, bdc) or 256 (bfc) products of values
// in [-1, 1] differ from the FP64 sums by a few ulps of the result's scale.
void expect_matches(const std::string& file, const std::string& name, const std::vector<double>& want) {
  const SafetensorsData out = load_safetensors(file);
  ASSERT_EQ(out.tensors.size(), 1u);
  ASSERT_TRUE(out.tensors.count(name)) << file;
  const std::vector<double> got = as_f64(out.tensors.at(name));
  ASSERT_EQ(got.size(), want.size());
  double scale = 1, worst = 0;
  size_t at = 0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > worst) worst = std::fabs(got[i] - want[i]), at = i;
  EXPECT_LE(worst, 1e-5 * scale) << name << "[" << at << "]: expected " << want[at] << ", got " << got[at];
}

// Runs `dwconv <args> --out <file>` and compares its one output tensor with `want`.
void run_and_compare(const std::string& args, const std::string& file, const std::string& name,
                     const std::vector<double>& want) {
  const RunResult r = run_tool("dwconv", args + " --out " + file);
  ASSERT_EQ(r.status, 0) << r.output;
  expect_matches(file, name, want);
}

TEST(DwconvTool, StridedOpsMatchReference) {
  const std::string dir = tool_scratch_dir();
  const Problem pr = strided_problem();
  save_safetensors(dir + "/in.safetensors", {{"x", pr.x}, {"w", pr.w}, {"dy", pr.dy}});
  const std::string geo = " --in " + dir + "/in.safetensors --stride 2,2 --padding 3,2,1,2 ";
  const dwconv::DwconvParams& p = pr.p;

  std::vector<double> y(size_t(p.y_elems())), dx(size_t(p.x_elems())), dw(size_t(p.w_elems()));
  dwconv::dwconv_forward_reference(as_f64(pr.x).data(), as_f64(pr.w).data(), nullptr, y.data(), p);
  dwconv::dwconv_backward_data_reference(as_f64(pr.dy).data(), as_f64(pr.w).data(), dx.data(), p);
  dwconv::dwconv_backward_filter_reference(as_f64(pr.x).data(), as_f64(pr.dy).data(), dw.data(), p);

  run_and_compare("fwd" + geo, dir + "/y.safetensors", "y", y);
  run_and_compare("bdc" + geo + "--input-size 17,34", dir + "/dx.safetensors", "dx", dx);
  run_and_compare("bfc" + geo + "--filter-size 7,5", dir + "/dw.safetensors", "dw", dw);
}

TEST(DwconvTool, StrideOneDerivesTheMissingExtent) {
  const std::string dir = tool_scratch_dir();
  dwconv::DwconvParams p;
  p.n = 1, p.ih = 13, p.iw = 9, p.c = 5, p.fh = 5, p.fw = 3;
  p.pad_top = 1, p.pad_bottom = 3, p.pad_left = 0, p.pad_right = 2;
  const Tensor x = uniform({1, 13, 9, 5}, 4), w = uniform({5, 3, 5}, 5), dy = uniform({1, p.oh(), p.ow(), 5}, 6);
  save_safetensors(dir + "/in.safetensors", {{"x", x}, {"w", w}, {"dy", dy}});
  std::vector<double> dx(size_t(p.x_elems())), dw(size_t(p.w_elems()));
  dwconv::dwconv_backward_data_reference(as_f64(dy).data(), as_f64(w).data(), dx.data(), p);
  dwconv::dwconv_backward_filter_reference(as_f64(x).data(), as_f64(dy).data(), dw.data(), p);
  const std::string geo = " --in " + dir + "/in.safetensors --padding 1,3,0,2 --device cpu --dtype f32 ";
  run_and_compare("bdc" + geo, dir + "/dx.safetensors", "dx", dx);
  run_and_compare("bfc" + geo, dir + "/dw.safetensors", "dw", dw);
}

TEST(DwconvTool, BadTensorsAreOneLineErrors) {
  const std::string dir = tool_scratch_dir();
  const Problem pr = strided_problem();
  auto file = [&](const std::string& name, const std::map<std::string, Tensor>& t) {
    save_safetensors(dir + "/" + name, t);
    return " --in " + dir + "/" + name + " --out " + dir + "/out.safetensors --stride 2,2 --padding 3,2,1,2";
  };
  expect_one_line_error("dwconv", "fwd" + file("no_w.safetensors", {{"x", pr.x}}),
                        "fwd: " + dir + "/no_w.safetensors has no tensor 'w' (fwd reads x and w; found: x)");
  expect_one_line_error("dwconv", "bdc" + file("no_dy.safetensors", {{"x", pr.x}, {"w", pr.w}}) + " --input-size 17,34",
                        "has no tensor 'dy' (bdc reads dy and w; found: w, x)");
  expect_one_line_error("dwconv", "bfc" + file("no_x.safetensors", {{"w", pr.w}, {"dy", pr.dy}}) + " --filter-size 7,5",
                        "has no tensor 'x' (bfc reads x and dy; found: dy, w)");
  expect_one_line_error("dwconv", "fwd" + file("rank.safetensors", {{"x", pr.x.reshape({34, 34, 72})}, {"w", pr.w}}),
                        "tensor 'x' in " + dir + "/rank.safetensors: expected rank 4 (N, H, W, C), got shape (34, 34, 72)");
  expect_one_line_error("dwconv", "bdc" + file("wrank.safetensors", {{"dy", pr.dy}, {"w", pr.w.reshape({35, 72})}}) +
                                      " --input-size 17,34",
                        "tensor 'w' in " + dir + "/wrank.safetensors: expected rank 3 (FH, FW, C), got shape (35, 72)");
  expect_one_line_error("dwconv", "fwd" + file("dtype.safetensors", {{"x", pr.x.to(DType::f64)}, {"w", pr.w}}),
                        "tensor 'x' in " + dir + "/dtype.safetensors: expected dtype F32, got f64");
  expect_one_line_error("dwconv", "fwd" + file("chan.safetensors", {{"x", pr.x}, {"w", uniform({7, 5, 71}, 9)}}),
                        "fwd: tensor 'w' (FH, FW, C) must have x's C: expected (7, 5, 72), got (7, 5, 71)");
  expect_one_line_error("dwconv", "bfc" + file("dy.safetensors", {{"x", pr.x}, {"dy", uniform({2, 9, 16, 72}, 9)}}) +
                                      " --filter-size 7,5",
                        "bfc: tensor 'dy' must be the output shape of N=2 IH=17 IW=34 C=72");
  expect_one_line_error("dwconv", "bdc" + file("all.safetensors", {{"x", pr.x}, {"w", pr.w}, {"dy", pr.dy}}),
                        "bdc: --input-size is required with --stride 2,2 (dy does not fix it under a stride)");
  expect_one_line_error("dwconv", "bfc" + file("all.safetensors", {{"x", pr.x}, {"w", pr.w}, {"dy", pr.dy}}),
                        "bfc: --filter-size is required with --stride 2,2");
  EXPECT_FALSE(fs::exists(dir + "/out.safetensors")) << "an error must not leave an output file";
}

TEST(DwconvTool, BadFlagsAndFilesAreOneLineErrors) {
  const std::string dir = tool_scratch_dir();
  const Problem pr = strided_problem();
  save_safetensors(dir + "/in.safetensors", {{"x", pr.x}, {"w", pr.w}, {"dy", pr.dy}});
  const std::string io = " --in " + dir + "/in.safetensors --out " + dir + "/out.safetensors";
  expect_one_line_error("dwconv", "fwd" + io + " --stride 2", "--stride: expected h,w (integers >= 1), got '2'");
  expect_one_line_error("dwconv", "fwd" + io + " --stride 0,1", "--stride: expected h,w (integers >= 1), got '0,1'");
  expect_one_line_error("dwconv", "fwd" + io + " --padding 1,1,1", "--padding: expected t,b,l,r (integers >= 0)");
  expect_one_line_error("dwconv", "fwd" + io + " --padding 1,-1,1,1", "got '1,-1,1,1'");
  expect_one_line_error("dwconv", "fwd" + io + " --padding 1,x,1,1", "got '1,x,1,1'");
  expect_one_line_error("dwconv", "fwd" + io + " --input-size 17,34", "--input-size: only for bdc");
  expect_one_line_error("dwconv", "bdc" + io + " --filter-size 7,5", "--filter-size: only for bfc");
  expect_one_line_error("dwconv", "fwd" + io + " --dtype f16", "--dtype f16 runs the FP16 CUDA kernels; needs --device cuda");
  expect_one_line_error("dwconv", "fwd" + io + " --bfc-accum ha", "--bfc-accum selects the FP16 backward-filter");
  expect_one_line_error("dwconv", "bdc" + io + " --stride 2,2 --input-size 3,3",
                        "bdc: filter larger than the padded input (output would be empty)");
  save_safetensors(dir + "/small_x.safetensors", {{"x", uniform({2, 5, 5, 72}, 7)}, {"dy", pr.dy}});
  expect_one_line_error("dwconv", "bfc --in " + dir + "/small_x.safetensors --out " + dir + "/out.safetensors",
                        "bfc: the tensors and flags give no valid problem");
  expect_one_line_error("dwconv", "fwd --in " + dir + "/absent.safetensors --out " + dir + "/o.safetensors",
                        "safetensors: '" + dir + "/absent.safetensors' does not exist");
  std::ifstream in(dir + "/in.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir + "/cut.safetensors", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expect_one_line_error("dwconv", "fwd --in " + dir + "/cut.safetensors --out " + dir + "/o.safetensors",
                        "safetensors: " + dir + "/cut.safetensors");
  expect_one_line_error("dwconv", "conv" + io, "dwconv: error:", 2);
  expect_one_line_error("dwconv", "fwd --in " + dir + "/in.safetensors", "--out is required", 2);
  expect_one_line_error("dwconv", "fwd" + io + " --dtype f64", "--dtype", 2);
  EXPECT_FALSE(fs::exists(dir + "/out.safetensors"));
}

}  // namespace
}  // namespace cnn::test
