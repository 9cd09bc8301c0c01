// IDX reader on small synthetic files (gzip and plain) with every malformation, and the real Fashion-MNIST files.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/fashion_mnist.h"

namespace cnn {
namespace {

namespace fs = std::filesystem;

class Idx : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cnn_idx_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write_gz(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), unsigned(bytes.size()));
    gzclose(f);
    return path;
  }
  static std::string header(uint8_t type, std::vector<uint32_t> dims) {
    std::string h = {0, 0, char(type), char(dims.size())};
    for (uint32_t d : dims) h += {char(d >> 24), char(d >> 16), char(d >> 8), char(d)};
    return h;
  }
  std::string error_of(const std::string& bytes) {
    const std::string path = write_gz("bad.gz", bytes);
    try {
      data::read_idx(path);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      return e.what();
    }
    return "<no error>";
  }
  fs::path dir_;
};

TEST_F(Idx, ReadsGzipAndPlain) {
  const std::string bytes = header(0x08, {2, 3}) + std::string("\x01\x02\x03\x04\x05\x06", 6);
  const data::IdxArray a = data::read_idx(write_gz("a.gz", bytes));
  EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6}));
  const std::string plain = (dir_ / "plain.idx").string();
  std::ofstream(plain, std::ios::binary) << bytes;
  EXPECT_EQ(data::read_idx(plain).data, a.data);
}

TEST_F(Idx, Malformed) {
  EXPECT_NE(error_of("\x00\x00").find("magic"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x01\x00\x08\x01", 4)).find("bad magic"), std::string::npos);
  EXPECT_NE(error_of(header(0x0D, {1}) + "abcd").find("not 0x08"), std::string::npos);
  EXPECT_NE(error_of(header(0x08, {})).find("1 to 4 dimensions"), std::string::npos);
  EXPECT_NE(error_of(header(0x08, {0})).find("has size 0"), std::string::npos);
  EXPECT_NE(error_of(header(0x08, {4})).find("truncated"), std::string::npos);
  EXPECT_NE(error_of(header(0x08, {1}) + "ab").find("trailing bytes"), std::string::npos);
  EXPECT_NE(error_of(std::string("\x00\x00\x08\x02\x00\x00", 6)).find("dimension sizes"), std::string::npos);
  EXPECT_THROW(data::read_idx((dir_ / "absent.gz").string()), Error);
  EXPECT_THROW(data::load_fashion_mnist(dir_.string(), "valid"), Error);
  EXPECT_THROW(data::load_fashion_mnist(dir_.string(), "train"), Error);  // files missing
}

TEST(FashionMnist, RealFilesLoadAndBatch) {
  const data::FashionMnist test = data::load_fashion_mnist(data::kFashionMnistDir, "test");
  ASSERT_EQ(test.size(), 10000);
  EXPECT_EQ(test.images.shape(), (Shape{10000, 28, 28, 1}));
  std::vector<int64_t> counts(10, 0);
  for (int64_t y : test.labels.to_vector<int64_t>()) ++counts[size_t(y)];
  for (int64_t c : counts) EXPECT_EQ(c, 1000);  // the test split is balanced
  auto [x, y] = data::fashion_mnist_batch(test, {0, 9999}, Device::cpu());
  EXPECT_EQ(x.shape(), (Shape{2, 784}));
  EXPECT_EQ(y.shape(), (Shape{2}));
  const std::vector<float> xv = x.to_vector<float>();
  const float lo = -data::kFashionMnistMean / data::kFashionMnistStd;
  for (float v : xv) EXPECT_GE(v, lo - 1e-5f);
  EXPECT_THROW(data::fashion_mnist_batch(test, {10000}, Device::cpu()), Error);
}

}  // namespace
}  // namespace cnn
