#include "tests/support/scratch_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace cnn::test {

std::string test_scratch_dir(const std::string& prefix) {
  namespace fs = std::filesystem;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = prefix + (info ? std::string(info->test_suite_name()) + "_" + info->name() : "no_test");
  const fs::path dir = fs::path(::testing::TempDir()) / (name + "." + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

}  // namespace cnn::test
