// Id-encoding JPEG trees and the scratch-directory fixture for the data tests.
#include "tests/data/jpeg_tree.h"

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "data/image_decode.h"

namespace cnn::test {

namespace fs = std::filesystem;

cv::Mat id_image(int id, int width, int height) {
  const int r = id / 36, g = (id / 6) % 6, b = id % 6;
  return cv::Mat(height, width, CV_8UC3, cv::Scalar(r * 51, g * 51, b * 51));
}

int decode_id(const Tensor& images_host, int64_t row) {
  const Tensor x = images_host.slice(0, row, row + 1).to(DType::f32).contiguous();
  const float* p = x.data<float>();
  const int64_t pixels = x.numel() / 3;
  int level[3];
  for (int c = 0; c < 3; ++c) level[c] = int(std::lround(p[c] * 255.0f / 51.0f));
  for (int64_t i = 0; i < pixels; ++i) {
    for (int c = 0; c < 3; ++c) {
      // One level is 51 pixel values; JPEG at quality 100 and bilinear resizing of a constant image stay within 3.
      if (std::abs(p[i * 3 + c] * 255.0f - float(level[c] * 51)) > 3.0f) return -1;
    }
  }
  return level[0] * 36 + level[1] * 6 + level[2];
}

void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  ASSERT_TRUE(bool(out)) << "cannot write " << path;
}

std::vector<fs::path> write_id_tree(const fs::path& root, int n, int classes, int width, int height) {
  EXPECT_LE(n, kMaxEncodedId);
  std::vector<fs::path> paths;
  for (int id = 0; id < n; ++id) {
    char name[64];
    std::snprintf(name, sizeof(name), "train/c%02d/img_%03d.JPEG", id % classes, id);
    paths.push_back(root / name);
    write_bytes(paths.back(), data::encode_jpeg(id_image(id, width, height), data::JpegPixels::rgb, 100));
  }
  return paths;
}

int id_of_path(const std::string& path) {
  const size_t at = path.rfind("img_");
  return at == std::string::npos ? -1 : std::stoi(path.substr(at + 4, 3));
}

void ScratchDir::SetUp() {
  static std::atomic<int> counter{0};
  dir_ = fs::temp_directory_path() /
         ("cnn_data_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter.fetch_add(1)));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
}

void ScratchDir::TearDown() { fs::remove_all(dir_); }

}  // namespace cnn::test
