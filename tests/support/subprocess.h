// Runs a command line through the shell with stdout and stderr captured together (the CLI tests).
#pragma once

#include <string>

namespace cnn::test {

struct RunResult {
  int status = -1;     // exit status (-1: killed by a signal)
  std::string output;  // stdout and stderr together
};

RunResult run_command(const std::string& command_line);

// A built binary: the file of the same name beside the running test executable when there is one (the build folder
// holds the tests and the tools together, and so does a device bundle, whose copies are not at CMake's paths), else
// CMake's path `built`.
std::string binary_path(const std::string& built);

}  // namespace cnn::test
