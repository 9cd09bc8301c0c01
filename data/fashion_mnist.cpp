// IDX reading through zlib (gzread also reads uncompressed files) with strict checks, and Fashion-MNIST batching.
#include "data/fashion_mnist.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/file_io.h"

namespace cnn::data {

namespace {

constexpr int64_t kMaxIdxBytes = int64_t(1) << 31;

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw Error(str_cat("idx: ", path, ": ", problem));
}

// Reads exactly n bytes; returns how many were read before end of file.
size_t read_bytes(gzFile f, void* dst, size_t n, const std::string& path) {
  size_t got = 0;
  while (got < n) {
    const unsigned chunk = unsigned(std::min<size_t>(n - got, size_t(1) << 30));
    const int r = gzread(f, static_cast<char*>(dst) + got, chunk);
    if (r < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      fail(path, str_cat("read error (", msg, ")"));
    }
    if (r == 0) break;
    got += size_t(r);
  }
  return got;
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  require_regular_file(path, "fashion-mnist");  // gzopen would block on a FIFO
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) fail(path, str_cat("cannot open (", std::strerror(errno), ")"));
  uint8_t magic[4];
  if (read_bytes(f.get(), magic, 4, path) != 4) fail(path, "file ends inside the 4-byte magic number");
  if (magic[0] != 0 || magic[1] != 0) fail(path, "bad magic number: the first two bytes must be zero");
  if (magic[2] != 0x08) fail(path, str_cat("element type code 0x", std::hex, int(magic[2]), " is not 0x08 (u8)"));
  const int ndims = magic[3];
  if (ndims < 1 || ndims > 4) fail(path, str_cat("expected 1 to 4 dimensions, got ", ndims));
  IdxArray out;
  int64_t total = 1;
  for (int i = 0; i < ndims; ++i) {
    uint8_t b[4];
    if (read_bytes(f.get(), b, 4, path) != 4) fail(path, "file ends inside the dimension sizes");
    const int64_t d = (int64_t(b[0]) << 24) | (int64_t(b[1]) << 16) | (int64_t(b[2]) << 8) | int64_t(b[3]);
    if (d < 1) fail(path, str_cat("dimension ", i, " has size ", d));
    total *= d;
    if (total > kMaxIdxBytes) fail(path, "array larger than 2 GiB");
    out.dims.push_back(d);
  }
  out.data.resize(size_t(total));
  const size_t got = read_bytes(f.get(), out.data.data(), size_t(total), path);
  if (got != size_t(total)) fail(path, str_cat("truncated: header promises ", total, " data bytes, file holds ", got));
  uint8_t extra;
  if (read_bytes(f.get(), &extra, 1, path) != 0) fail(path, str_cat("trailing bytes after the ", total, " data bytes"));
  return out;
}

FashionMnist load_fashion_mnist(const std::string& dir, const std::string& split) {
  CNN_CHECK(split == "train" || split == "test", "load_fashion_mnist: split must be 'train' or 'test', got '", split,
            "'");
  const std::string prefix = dir + "/" + (split == "train" ? "train" : "t10k");
  const std::string images_path = prefix + "-images-idx3-ubyte.gz", labels_path = prefix + "-labels-idx1-ubyte.gz";
  IdxArray images = read_idx(images_path);
  IdxArray labels = read_idx(labels_path);
  if (images.dims.size() != 3 || images.dims[1] != 28 || images.dims[2] != 28) {
    fail(images_path, "expected images of shape (N, 28, 28)");
  }
  if (labels.dims.size() != 1) fail(labels_path, "expected labels of shape (N)");
  if (labels.dims[0] != images.dims[0]) {
    fail(labels_path, str_cat(labels.dims[0], " labels for ", images.dims[0], " images in ", images_path));
  }
  const int64_t n = images.dims[0];
  FashionMnist ds;
  ds.images = Tensor::from_host(images.data.data(), {n, 28, 28, 1}, DType::u8, Device::cpu(), "fashion-mnist images");
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (labels.data[size_t(i)] > 9) fail(labels_path, str_cat("label ", int(labels.data[size_t(i)]), " at index ", i,
                                                              " outside [0, 10)"));
    y[size_t(i)] = labels.data[size_t(i)];
  }
  ds.labels = Tensor::from_vector(y, {n}, Device::cpu(), "fashion-mnist labels");
  return ds;
}

std::pair<Tensor, Tensor> fashion_mnist_batch(const FashionMnist& ds, const std::vector<int64_t>& indices,
                                              Device device) {
  constexpr int64_t kPixels = 28 * 28;
  const int64_t b = int64_t(indices.size());
  Tensor x = Tensor::empty({b, kPixels}, DType::f32, Device::cpu(), "batch images");
  Tensor y = Tensor::empty({b}, DType::i64, Device::cpu(), "batch labels");
  const uint8_t* src = ds.images.data<uint8_t>();
  const int64_t* lab = ds.labels.data<int64_t>();
  float* xp = x.data<float>();
  int64_t* yp = y.data<int64_t>();
  const float scale = 1.0f / (255.0f * kFashionMnistStd), shift = kFashionMnistMean / kFashionMnistStd;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t r = indices[size_t(i)];
    CNN_CHECK(r >= 0 && r < ds.size(), "fashion_mnist_batch: index ", r, " outside [0, ", ds.size(), ")");
    for (int64_t p = 0; p < kPixels; ++p) xp[i * kPixels + p] = float(src[r * kPixels + p]) * scale - shift;
    yp[i] = lab[r];
  }
  return {x.to(device), y.to(device)};
}

}  // namespace cnn::data
