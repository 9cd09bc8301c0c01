// Subprocess runner, scratch folders and test checkpoints for the tool tests.
#include "tests/tools/tools_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/autograd.h"
#include "models/checkpoint.h"
#include "models/registry.h"
#include "tests/models/model_test_util.h"
#include "tests/support/scratch_dir.h"

namespace cnn::test {

namespace fs = std::filesystem;

RunResult run_tool(const std::string& tool, const std::string& args) {
  return run_command(binary_path(std::string(CNN_BIN_DIR) + "/" + tool) + " " + args);
}

std::string tool_scratch_dir() { return test_scratch_dir("cnn_tools_"); }

void expect_one_line_error(const std::string& tool, const std::string& args, const std::string& expected,
                           int status) {
  const RunResult r = run_tool(tool, args);
  EXPECT_EQ(r.status, status) << tool << " " << args << ":\n" << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1)
      << tool << " " << args << ": expected one line, got:\n"
      << r.output;
  EXPECT_NE(r.output.find(expected), std::string::npos)
      << tool << " " << args << ": expected '" << expected << "' in:\n"
      << r.output;
}

std::string model_config(const std::string& name) { return (fs::path(models_dir()) / (name + ".yaml")).string(); }

std::shared_ptr<Model> save_test_model(const std::string& name, uint64_t seed, const std::string& path) {
  std::shared_ptr<Model> model = build_model(model_config(name), seed);
  NoGradGuard no_grad;
  uint64_t offset = 0;
  for (NamedParameter& p : model->named_parameters()) {
    if (p.name.find("bn.weight") != std::string::npos || p.name.ends_with("gamma"))
      p.tensor.uniform_(seed, offset, 0.3, 1.0);
    offset += uint64_t(p.tensor.numel());
  }
  for (auto& [name_, t] : model->named_buffers()) {
    if (name_.ends_with("running_mean")) t.uniform_(seed + 1, offset, -0.2, 0.2);
    if (name_.ends_with("running_var")) t.uniform_(seed + 2, offset, 0.5, 1.5);
    offset += uint64_t(t.numel());
  }
  model->eval();
  save_checkpoint(path, *model);
  return model;
}

}  // namespace cnn::test
