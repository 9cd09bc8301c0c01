// Fashion-MNIST: IDX file reader (plain or gzip via zlib) and the dataset as tensors. Images are (N, 28, 28, 1) u8
// (NHWC), labels (N) i64 in [0, 10). Default directory: /usr/share/datasets/fashion-mnist (Debian package
// dataset-fashion-mnist), files train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-*.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace cnn::data {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr float kFashionMnistMean = 0.2860f;  // pixel mean / 255 over the training set
inline constexpr float kFashionMnistStd = 0.3530f;   // pixel std / 255 over the training set
// Class names in label order (the data set's README).
inline constexpr const char* kFashionMnistClasses[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                         "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

// An unsigned-byte IDX array (type code 0x08): big-endian int32 extents, then the bytes.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};
// Reads `path` (gzip or plain); any malformation is a one-line cnn::Error naming the file.
IdxArray read_idx(const std::string& path);

struct FashionMnist {
  Tensor images;  // (N, 28, 28, 1) u8
  Tensor labels;  // (N) i64
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

// split: "train" or "test" (the t10k files).
FashionMnist load_fashion_mnist(const std::string& dir, const std::string& split);

// Rows `indices` as a flat normalized batch on `device`: x (B, 784) f32 = (pixel / 255 - mean) / std, labels (B).
std::pair<Tensor, Tensor> fashion_mnist_batch(const FashionMnist& ds, const std::vector<int64_t>& indices,
                                              Device device);

}  // namespace cnn::data
