// Model configs: every configs/models/*.yaml builds with its expected parameter count (timm's exact numbers for
// ConvNeXt / ConvMixer, the reference definitions' for RepLKNet / SLaK), and bad YAML gives the documented errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "core/error.h"
#include "models/registry.h"
#include "models/yaml_struct.h"
#include "tests/models/model_test_util.h"

namespace cnn {
namespace {

// Parameter counts (weights and biases, not buffers), independently computed from the reference definitions
// (timm convnext.py / convmixer.py, RepLKNet-pytorch replknet.py, SLaK models/SLaK.py).
const std::map<std::string, int64_t> kExpectedParams = {
    {"convnext_tiny", 28589128},     // timm convnext_tiny
    {"convnext_tiny_k9", 28801096},  // + 96+192+384+768 channels * (81 - 49) * blocks
    {"convnext_tiny_k31", 34630216},
    {"convnext_nano_fmnist", 360490},
    {"convnext_tiny_gray64", 27824746},  // convnext_tiny - 2 * 16 * 96 stem inputs - 990 * 769 head outputs
    {"convmixer_768_32", 21110248},   // timm convmixer_768_32
    {"convmixer_1536_20", 51625960},  // timm convmixer_1536_20
    {"convmixer_1536_20_k11", 52854760},
    {"convmixer_128_6_k7_p2", 142730},
    {"convmixer_32_4_k9_p2", 15786},  // 224 stem + 4 * 3808 blocks + 330 head
    {"replknet_31b", 79864168},  // the paper's "79M"
    {"replknet_tiny_test", 72634},
    {"replknet_small_gray64", 11550282},  // the reference definition's count, as for replknet_31b
    {"slak_tiny", 50703838},  // dense tensors of SLaK-T (the paper's 30M counts the sparse weights)
    {"slak_tiny_dense", 60818614},
    {"slak_tiny_test", 80334},
};

TEST(ModelConfigs, EveryYamlBuildsWithExpectedParameterCount) {
  const std::vector<std::string> names = model_names(test::models_dir());
  ASSERT_EQ(names.size(), kExpectedParams.size()) << "configs/models and the expected-count table differ";
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    auto it = kExpectedParams.find(name);
    ASSERT_NE(it, kExpectedParams.end()) << "no expected parameter count for configs/models/" << name << ".yaml";
    const ModelConfig config = load_model_config(resolve_model_config(name, test::models_dir()));
    EXPECT_EQ(model_common(config).name, name);
    const std::shared_ptr<Model> model = build_model(config);  // not initialised: only counted
    EXPECT_EQ(model->parameter_count(), it->second);
  }
}

TEST(ModelConfigs, SlakWidthsFollowPythonIntTruncation) {
  const auto c = std::get<SLaKConfig>(load_model_config(resolve_model_config("slak_tiny", test::models_dir())));
  EXPECT_EQ(c.width(0), 124);
  EXPECT_EQ(c.width(1), 249);
  EXPECT_EQ(c.width(2), 499);
  EXPECT_EQ(c.width(3), 998);
}

TEST(ModelConfigs, Convmixer768UsesReluLikeTimm) {
  const auto c =
      std::get<ConvMixerConfig>(load_model_config(resolve_model_config("convmixer_768_32", test::models_dir())));
  EXPECT_EQ(c.activation, "relu");
  EXPECT_EQ(c.kernel_size, 7);
  EXPECT_EQ(c.patch_size, 7);
}

TEST(ModelConfigs, NamesResolveThroughTheSourceDirectory) {
  // ctest sets CNN_SOURCE_DIR; without CNN_MODEL_CONFIG_DIR names resolve under $CNN_SOURCE_DIR/configs/models.
  if (std::getenv("CNN_MODEL_CONFIG_DIR")) GTEST_SKIP() << "CNN_MODEL_CONFIG_DIR overrides the source directory";
  EXPECT_EQ(model_config_dir(), test::models_dir());
  auto model = build_model("convmixer_128_6_k7_p2", 5);
  EXPECT_EQ(model->common().name, "convmixer_128_6_k7_p2");
  EXPECT_EQ(model->common().family, "convmixer");
  EXPECT_EQ(model->init_scheme(), InitScheme::pytorch_default);
}

TEST(ModelConfigs, UnknownNameListsKnownModels) {
  try {
    resolve_model_config("resnet50", test::models_dir());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unknown model 'resnet50'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("convmixer_128_6_k7_p2"), std::string::npos) << msg;
  }
}

// A valid ConvNeXt config whose line 15 is stage 2's kernel_size (value at column 18).
const char* kGood =
    "family: convnext\n"     // 1
    "in_channels: 1\n"       // 2
    "num_classes: 10\n"      // 3
    "input_size: 28\n"       // 4
    "patch_size: 2\n"        // 5
    "stages:\n"              // 6
    "  - depth: 1\n"         // 7
    "    dim: 8\n"           // 8
    "    kernel_size: 3\n"   // 9
    "  - depth: 1\n"         // 10
    "    dim: 16\n"          // 11
    "    kernel_size: 3\n"   // 12
    "  - depth: 1\n"         // 13
    "    dim: 32\n"          // 14
    "    kernel_size: 3\n";  // 15

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

// Writes `text` to a temp file and returns the error message of loading it ("" when it loads).
std::string load_error(const test::TempDir& dir, const std::string& text, std::string* path = nullptr) {
  const std::string file = dir.write("bad.yaml", text);
  if (path) *path = file;
  try {
    load_model_config(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class BadModelYaml : public ::testing::Test {
 protected:
  test::TempDir dir_{"cnn_bad_yaml"};
  std::string path_;
  std::string error(const std::string& text) { return load_error(dir_, text, &path_); }
};

TEST_F(BadModelYaml, GoodBaseLoads) {
  EXPECT_EQ(error(kGood), "");
  const auto c = std::get<ConvNeXtConfig>(load_model_config(path_));
  ASSERT_EQ(c.stages.size(), 3u);
  EXPECT_EQ(c.stages[2].dim, 32);
  EXPECT_EQ(c.common.name, "bad");
}

TEST_F(BadModelYaml, WrongType) {
  const std::string e = error(replace(kGood, "    dim: 32\n    kernel_size: 3", "    dim: 32\n    kernel_size: seven"));
  EXPECT_EQ(e, path_ + ":15:18: stages[2].kernel_size: expected an odd integer >= 1, got 'seven'");
}

TEST_F(BadModelYaml, BadValue) {
  const std::string e = error(replace(kGood, "    dim: 32\n    kernel_size: 3", "    dim: 32\n    kernel_size: 8"));
  EXPECT_EQ(e, path_ + ":15:18: stages[2].kernel_size: expected an odd integer >= 1, got '8'");
}

TEST_F(BadModelYaml, QuotedNumberIsAString) {
  const std::string e = error(replace(kGood, "patch_size: 2", "patch_size: \"2\""));
  EXPECT_EQ(e, path_ + ":5:13: patch_size: expected an integer >= 1, got the string \"2\"");
}

TEST_F(BadModelYaml, UnknownKey) {
  const std::string e = error(replace(kGood, "    dim: 16\n", "    dim: 16\n    kernel: 3\n"));
  EXPECT_EQ(e, path_ + ":12:5: stages[1].kernel: unknown key (known: depth, dim, kernel_size)");
}

TEST_F(BadModelYaml, UnknownTopLevelKey) {
  const std::string e = error(std::string(kGood) + "dropout: 0.5\n");
  EXPECT_NE(e.find(path_ + ":16:1: dropout: unknown key (known: "), std::string::npos) << e;
}

TEST_F(BadModelYaml, DuplicateKey) {
  const std::string e = error(replace(kGood, "    dim: 16\n", "    dim: 16\n    dim: 24\n"));
  EXPECT_EQ(e, path_ + ":12:5: stages[1].dim: duplicate key (first at line 11:5)");
}

TEST_F(BadModelYaml, DuplicateTopLevelKey) {
  const std::string e = error(replace(kGood, "num_classes: 10\n", "num_classes: 10\nnum_classes: 100\n"));
  EXPECT_EQ(e, path_ + ":4:1: num_classes: duplicate key (first at line 3:1)");
}

TEST_F(BadModelYaml, MissingKey) {
  const std::string e = error(replace(kGood, "  - depth: 1\n    dim: 8\n", "  - dim: 8\n"));
  EXPECT_EQ(e, path_ + ":7:5: stages[0]: missing required key 'depth'");
}

TEST_F(BadModelYaml, MissingTopLevelKey) {
  const std::string e = error(replace(kGood, "num_classes: 10\n", ""));
  EXPECT_EQ(e, path_ + ":1:1: document: missing required key 'num_classes'");
}

TEST_F(BadModelYaml, UnknownFamily) {
  const std::string e = error(replace(kGood, "family: convnext", "family: resnet"));
  EXPECT_EQ(e, path_ + ":1:9: family: expected one of convnext, convmixer, replknet, slak, got 'resnet'");
}

TEST_F(BadModelYaml, ListLength) {
  const std::string e = error(std::string(kGood).substr(0, std::string(kGood).find("stages:")) + "stages: []\n");
  EXPECT_EQ(e, path_ + ":6:9: stages: expected a list of 1 to 8 entries, got 0");
}

TEST_F(BadModelYaml, MapWhereScalarExpected) {
  const std::string e = error(replace(kGood, "patch_size: 2", "patch_size: {a: 1}"));
  EXPECT_EQ(e, path_ + ":5:13: patch_size: expected an integer >= 1, got a map");
}

TEST_F(BadModelYaml, SyntaxError) {
  const std::string e = error("family: convnext\nstages: [1, 2\n");
  EXPECT_EQ(e.rfind(path_ + ":", 0), 0u) << e;
  EXPECT_NE(e.find(": YAML syntax error: "), std::string::npos) << e;
}

TEST_F(BadModelYaml, CrossFieldCheck) {
  const std::string text =
      "family: replknet\nin_channels: 3\nnum_classes: 10\ninput_size: 64\nsmall_kernel: 9\nstages:\n"
      "  - depth: 1\n    channels: 8\n    kernel_size: 7\n";
  const std::string e = error(text);
  EXPECT_EQ(e, path_ +
                   ":5:15: small_kernel: expected <= every stage's kernel_size, got 9 > "
                   "stages[0].kernel_size = 7");
}

TEST_F(BadModelYaml, FamilySpecificKeyRejectedElsewhere) {
  // drop_path_rate means nothing to ConvMixer (no stochastic depth in timm's ConvMixer).
  const std::string text =
      "family: convmixer\nin_channels: 1\nnum_classes: 10\ninput_size: 28\ndim: 8\ndepth: 1\nkernel_size: 3\n"
      "patch_size: 2\nactivation: gelu\ndrop_path_rate: 0.1\n";
  const std::string e = error(text);
  EXPECT_NE(e.find(path_ + ":10:1: drop_path_rate: unknown key"), std::string::npos) << e;
}

TEST(YamlStruct, ScalarConversionsAreStrict) {
  const YAML::Node n = yaml_struct::load_string("a: 12\nb: 1.5e-3\nc: 0x10\nd: true\ne: yes\nf: .inf\ng: '7'\n", "t");
  EXPECT_EQ(yaml_struct::as_int(n["a"]), 12);
  EXPECT_FALSE(yaml_struct::as_int(n["b"]).has_value());
  EXPECT_DOUBLE_EQ(*yaml_struct::as_number(n["b"]), 1.5e-3);
  EXPECT_FALSE(yaml_struct::as_int(n["c"]).has_value());
  EXPECT_FALSE(yaml_struct::as_number(n["c"]).has_value());
  EXPECT_EQ(yaml_struct::as_bool(n["d"]), true);
  EXPECT_FALSE(yaml_struct::as_bool(n["e"]).has_value());
  EXPECT_FALSE(yaml_struct::as_number(n["f"]).has_value());
  EXPECT_FALSE(yaml_struct::as_int(n["g"]).has_value());
  EXPECT_EQ(yaml_struct::as_string(n["g"]), "7");
}

TEST(YamlStruct, OutOfRangeIntForIntField) {
  const YAML::Node n = yaml_struct::load_string("depth: 99999999999\n", "t.yaml");
  yaml_struct::MapReader r(n, "t.yaml", "");
  int depth = 0;
  try {
    r.required("depth", depth, yaml_struct::int_at_least(1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "t.yaml:1:8: depth: expected an integer >= 1 (32-bit), got '99999999999'");
  }
}

}  // namespace
}  // namespace cnn
