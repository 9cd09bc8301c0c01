// Runs a command line through the shell with stdout and stderr captured together (the CLI tests).
#pragma once

#include <string>

namespace cnn::test {

struct RunResult {
  int status = -1;     // exit status (-1: killed by a signal)
  std::string output;  // stdout and stderr together
};

RunResult run_command(const std::string& command_line);

// A built binary: CMake's path `built`, or the file of the same name in $CNN_BIN_DIR when that is set (the GPU machine
// runs the bundle's copies, not the build folder's).
std::string binary_path(const std::string& built);

}  // namespace cnn::test
