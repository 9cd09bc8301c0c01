// Test trees of tiny JPEGs whose constant color encodes their id (base-6 digits in R, G, B at levels 0, 51, ...,
// 255, written at quality 100 so decoding and any crop/resize keep the id), plus a scratch-directory fixture.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/opencv.h"

namespace cnn::test {

inline constexpr int kMaxEncodedId = 216;  // 6^3 colors

// Constant RGB image of `id`.
cv::Mat id_image(int id, int width, int height);
// The id of an NHWC f32/f16 row normalized with mean 0, std 1 (pixel / 255), read from its first pixel; also
// checks that every pixel of the row agrees within one level (else returns -1).
int decode_id(const Tensor& images_host, int64_t row);
// Writes bytes to a file (creating parent folders).
void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);
// train/c<k>/img_<id>.JPEG for id in [0, n), class id % classes; returns the paths by id.
std::vector<std::filesystem::path> write_id_tree(const std::filesystem::path& root, int n, int classes, int width,
                                                 int height);
// The id in a path written by write_id_tree.
int id_of_path(const std::string& path);

// A fresh scratch directory per test, removed afterwards.
class ScratchDir : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  std::filesystem::path dir_;
};

}  // namespace cnn::test
