// popen-based runner for the CLI tests.
#include "tests/support/subprocess.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
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
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = self.parent_path() / fs::path(built).filename();
    if (fs::exists(beside, ec)) return beside.string();
  }
  return built;
}

}  // namespace cnn::test
