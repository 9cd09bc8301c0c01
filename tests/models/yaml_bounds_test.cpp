// Bounded, strict YAML reading (models/yaml_struct.h): alias cycles and alias bombs end in a one-line error in
// milliseconds (not a stack overflow or minutes of walking), tags other than !!str are refused, !!str makes a string,
// booleans are lowercase true/false only, a second document is refused, and a folder or FIFO is refused by type.
// Also the model-config limits that ride on the resource estimate (SLaK small_kernel, input_size, block count).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "core/error.h"
#include "models/registry.h"
#include "models/resource_estimate.h"
#include "models/yaml_struct.h"
#include "tests/models/model_test_util.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

namespace ys = yaml_struct;

using test::error_of;

void expect_error(const std::string& yaml, const std::string& expected) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = error_of([&] { ys::load_string(yaml, "f.yaml"); });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(msg.find(expected), std::string::npos) << "yaml:\n" << yaml << "\nexpected '" << expected << "', got: " << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  // Generous: the bound is 100000 node visits; the point is "not minutes" (the unbounded walk took minutes).
  EXPECT_LT(s, 2.0) << "took " << s << " s: " << msg;
}

TEST(YamlBounds, AliasCyclesAreRefused) {
  expect_error("a: &a [*a]\n", "nested deeper than 64 levels");
  expect_error("a: &a {b: *a}\n", "nested deeper than 64 levels");
}

TEST(YamlBounds, AliasBombIsRefusedQuickly) {
  std::string yaml = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    yaml += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) yaml += (k ? ", *l" : "*l") + std::to_string(i - 1);
    yaml += "]\n";
  }
  expect_error(yaml, "more than 100000 YAML nodes (aliases count as their expansion)");
}

TEST(YamlBounds, DeepNestingIsRefused) {
  std::string yaml = "a: " + std::string(100, '[') + std::string(100, ']') + "\n";
  expect_error(yaml, "nested deeper than 64 levels");
}

TEST(YamlBounds, TagsAreHonouredOrRefused) {
  // !!str 7 is the string "7": an integer rule refuses it.
  const YAML::Node root = ys::load_string("n: !!str 7\nb: True\n", "f.yaml");
  EXPECT_FALSE(ys::as_int(root["n"]).has_value());
  EXPECT_EQ(ys::as_string(root["n"]).value_or(""), "7");
  EXPECT_EQ(ys::describe(root["n"]), "the string \"7\"");
  EXPECT_FALSE(ys::as_bool(root["b"]).has_value()) << "only lowercase true/false are booleans";
  EXPECT_EQ(ys::as_bool(ys::load_string("b: false\n", "f.yaml")["b"]).value_or(true), false);
  expect_error("n: !!int 7\n", "f.yaml:1:4: n: YAML tag 'tag:yaml.org,2002:int' is not supported");
  expect_error("n: !custom 7\n", "YAML tag '!custom' is not supported");
  expect_error("n: !!map {a: 1}\n", "is not supported");
}

TEST(YamlBounds, OneDocumentOnly) {
  expect_error("a: 1\n---\nb: 2\n", "f.yaml:3:1: a second YAML document (after '---'): expected one document, got 2");
  EXPECT_NO_THROW(ys::load_string("---\na: 1\n", "f.yaml"));
}

TEST(YamlBounds, ValuesAndKeysInMessagesStayOnOneBoundedLine) {
  // A binary file as a model config reads as one long scalar (yaml-cpp may take leading NULs for UTF-16): the
  // message echoes a printable excerpt of it.
  for (const std::string& binary : {std::string("\0\1\2\xc3\xbf ", 6) + std::string(500, 'z'),
                                    std::string("a\x01\x1b\xc3\xbf ") + std::string(500, 'z')}) {
    const std::string m = error_of([&] { ys::load_string(binary, "m.yaml"); });
    EXPECT_NE(m.find("m.yaml: expected a YAML map at the top level, got '"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_LT(m.size(), 400u) << m;
  }
  std::string m = error_of([] { ys::load_string(std::string("a\x01\x1b\xc3\xbf ") + std::string(500, 'z'), "m.yaml"); });
  EXPECT_NE(m.find("got 'a\\x01\\x1b\xc3\xbf zzz"), std::string::npos) << m;
  m = error_of([] { ys::MapReader r(ys::load_string("\"a\\x85b\": 1\n", "k.yaml"), "k.yaml", ""); r.finish(); });
  EXPECT_NE(m.find("a\\xc2\\x85b: unknown key"), std::string::npos) << m;
}

TEST(YamlBounds, OnlyRegularFilesAreRead) {
  test::TempDir dir("yaml_files");
  const std::string root = std::filesystem::path(dir.file("m.yaml")).parent_path().string();
  EXPECT_NE(error_of([&] { ys::load_file(root, "--model"); })
                .find("--model: '" + root + "' is a folder, not a regular file"),
            std::string::npos);
  const std::string fifo = dir.file("m.yaml");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Reading a FIFO would block forever; it is refused by type instead.
  EXPECT_NE(error_of([&] { ys::load_file(fifo, "--model"); }).find("is a FIFO, not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { load_model_config(fifo, "--model"); }).find("--model: '" + fifo + "' is a FIFO"),
            std::string::npos);
}

const char* kSlak =
    "family: slak\nin_channels: 3\nnum_classes: 10\ninput_size: 64\nwidth_factor: 1.0\nsmall_kernel: 99999\n"
    "decomposed: true\nstages:\n  - {depth: 1, dim: 16, kernel_size: 13}\n";

TEST(ModelLimits, SlakSmallKernelIsBoundedByTheStageKernels) {
  const std::string msg = error_of([] { parse_model_config(kSlak, "s.yaml"); });
  EXPECT_NE(msg.find("s.yaml:6:15: small_kernel: expected <= every stage's kernel_size, got 99999 > "
                     "stages[0].kernel_size = 13"),
            std::string::npos)
      << msg;
}

TEST(ModelLimits, InputSizeMustSurviveTheDownsampling) {
  const std::string yaml =
      "family: convnext\nin_channels: 1\nnum_classes: 10\ninput_size: 8\npatch_size: 4\n"
      "stages:\n  - {depth: 1, dim: 8, kernel_size: 3}\n  - {depth: 1, dim: 8, kernel_size: 3}\n"
      "  - {depth: 1, dim: 8, kernel_size: 3}\n";
  const std::string msg = error_of([&] { parse_model_config(yaml, "c.yaml"); });
  EXPECT_NE(msg.find("c.yaml:4:13: input_size: expected >= 16 (the model downsamples its input 16x), got 8"),
            std::string::npos)
      << msg;
}

TEST(ModelLimits, StochasticDepthBlockCountIsBounded) {
  const std::string yaml =
      "family: convnext\nin_channels: 1\nnum_classes: 10\ninput_size: 32\npatch_size: 4\n"
      "stages:\n  - {depth: 1000000, dim: 8, kernel_size: 3}\n";
  const std::string msg = error_of([&] { parse_model_config(yaml, "c.yaml"); });
  EXPECT_NE(msg.find("stages: expected at most 4095 blocks in all"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got 1000000"), std::string::npos) << msg;
}

// The estimate against the exact parameter counts of config_test.cpp (independently computed from the reference
// definitions). Bound 3%: the estimate follows the layer lists; what it rounds (norm and bias vectors of the small
// parts) is well under that for every config.
TEST(ResourceEstimate, ParametersMatchTheExactCounts) {
  const std::map<std::string, double> exact = {
      {"convnext_tiny", 28589128},  {"convnext_nano_fmnist", 360490}, {"convmixer_768_32", 21110248},
      {"convmixer_128_6_k7_p2", 142730}, {"replknet_31b", 79864168},  {"replknet_tiny_test", 72634},
      {"slak_tiny", 50703838},      {"slak_tiny_dense", 60818614},    {"slak_tiny_test", 80334},
  };
  for (const auto& [name, count] : exact) {
    const ModelConfig c = load_model_config(resolve_model_config(name, test::models_dir()));
    const ResourceEstimate e = estimate_resources(c, model_common(c).input_size);
    EXPECT_NEAR(e.parameters / count, 1.0, 0.03) << name << ": estimate " << e.parameters << ", exact " << count;
    EXPECT_GT(e.activation_floats_per_image, 0) << name;
    EXPECT_FALSE(e.largest_key.empty()) << name;
  }
}

TEST(ResourceEstimate, TrainingBytesAndFormatting) {
  ResourceEstimate e;
  e.parameters = 1000;
  e.activation_floats_per_image = 10;
  EXPECT_DOUBLE_EQ(training_bytes(e, 4, false), 1000 * 16 + 4 * 10 * 4);
  EXPECT_DOUBLE_EQ(training_bytes(e, 4, true), 1000 * 18 + 4 * 10 * 2);
  EXPECT_EQ(format_bytes(512), "512.0 B");
  EXPECT_EQ(format_bytes(3.5 * 1024 * 1024 * 1024), "3.5 GiB");
}

}  // namespace
}  // namespace cnn
