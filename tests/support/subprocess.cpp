// popen-based runner for the CLI tests.
#include "tests/support/subprocess.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace cnn::test {

RunResult run_command(const std::string& command_line) {
  const std::string cmd = command_line + " 2>&1";
  RunResult r;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return r;
  }
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string binary_path(const std::string& built) {
  const char* dir = std::getenv("CNN_BIN_DIR");
  if (dir == nullptr || *dir == '\0') return built;
  return (std::filesystem::path(dir) / std::filesystem::path(built).filename()).string();
}

}  // namespace cnn::test
