// Runs a command line through the shell with stdout and stderr captured together (the CLI tests).
#pragma once

#include <string>

namespace cnn::test {

struct RunResult {
  int status = -1;     // exit status (-1: killed by a signal)
  std::string output;  // stdout and stderr together
};

RunResult run_command(const std::string& command_line);

}  // namespace cnn::test
