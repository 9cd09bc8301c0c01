// Shared helpers for the model tests: the config directory, temporary files, seeded inputs.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/tensor.h"

namespace cnn::test {

// configs/models of the source tree (ctest sets CNN_SOURCE_DIR).
inline std::string models_dir() {
  const char* s = std::getenv("CNN_SOURCE_DIR");
  return (std::filesystem::path(s && *s ? s : ".") / "configs" / "models").string();
}

// A fresh directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    path_ = std::filesystem::temp_directory_path() /
            (tag + "_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
             std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

// (N, S, S, C) uniform [-1, 1) image batch from Philox stream `seed`.
inline Tensor random_images(int64_t n, int64_t size, int64_t channels, uint64_t seed) {
  Tensor x = Tensor::empty({n, size, size, channels}, DType::f32);
  x.uniform_(seed, 0, -1.0, 1.0);
  return x;
}

}  // namespace cnn::test
