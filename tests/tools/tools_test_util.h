// Helpers for the tool tests: run a built tool (folder from CMake: CNN_BIN_DIR) as a subprocess, a scratch folder
// per test, one-line error checks, and a small trained-looking model checkpoint to run the tools on.
#pragma once

#include <string>

#include "models/model.h"
#include "tests/support/subprocess.h"

namespace cnn::test {

// Runs `<CNN_BIN_DIR>/<tool> <args>` with stdout and stderr captured (binary_path: a copy beside the test executable
// comes first).
RunResult run_tool(const std::string& tool, const std::string& args);

// A fresh empty folder under the test temp dir, named after the running test.
std::string tool_scratch_dir();

// Expects a failing run whose whole output is one line containing `expected`.
void expect_one_line_error(const std::string& tool, const std::string& args, const std::string& expected,
                           int status = 1);

// configs/models/<name>.yaml of the source tree.
std::string model_config(const std::string& name);

// Builds `name` (configs/models) from `seed`, gives its BatchNorms non-trivial statistics and LayerScales 0.5
// (so every branch matters), saves it to `path` and returns it (eval mode).
std::shared_ptr<Model> save_test_model(const std::string& name, uint64_t seed, const std::string& path);

}  // namespace cnn::test
