// safetensors round trip for every dtype with metadata, atomic writing, and one test per malformed-file case.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/safetensors.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

namespace fs = std::filesystem;

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cnn_safetensors_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write_raw(const std::string& name, const std::string& header, const std::string& data,
                        int64_t header_len_override = -1) {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = header_len_override >= 0 ? uint64_t(header_len_override) : header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header << data;
    return path;
  }

  // The error of loading a file with this header and data; must be one line naming the file.
  std::string load_error(const std::string& header, const std::string& data, int64_t header_len = -1) {
    const std::string path = write_raw("bad.safetensors", header, data, header_len);
    try {
      load_safetensors(path);
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      return msg;
    }
    return "<no error>";
  }

  fs::path dir_;
};

TEST_F(Safetensors, RoundTripEveryDtypeAndMetadata) {
  std::map<std::string, Tensor> tensors;
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64, DType::u8}) {
    Tensor x = Tensor::empty({2, 3}, DType::f32);
    x.uniform_(1, 0, 0, 100);
    tensors[std::string("w_") + dtype_name(t)] = x.to(t);
  }
  tensors["empty"] = Tensor::empty({0, 4}, DType::f32);
  tensors["strided"] = tensors["w_f32"].permute({1, 0});  // written contiguous
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"step", "1200"}};
  const std::string path = (dir_ / "model.safetensors").string();
  save_safetensors(path, tensors, meta);
  const SafetensorsData back = load_safetensors(path);
  EXPECT_EQ(back.metadata, meta);
  ASSERT_EQ(back.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    ASSERT_TRUE(back.tensors.count(name)) << name;
    EXPECT_TRUE(test::bitwise_equal(t.contiguous(), back.tensors.at(name), name));
  }
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << "temporary file left behind";
  }
}

TEST_F(Safetensors, OverwriteIsAtomicRename) {
  const std::string path = (dir_ / "a.safetensors").string();
  save_safetensors(path, {{"x", Tensor::full({2}, 1, DType::f32)}});
  save_safetensors(path, {{"x", Tensor::full({3}, 2, DType::f32)}});
  EXPECT_EQ(load_safetensors(path).tensors.at("x").to_vector<float>(), std::vector<float>(3, 2.f));
  EXPECT_THROW(save_safetensors((dir_ / "missing_dir" / "a.safetensors").string(), {}), Error);
}

TEST_F(Safetensors, ReadsBoolAsU8) {
  const auto msg = load_error(R"({"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\x01\x00", 2));
  EXPECT_EQ(msg, "<no error>");
}

TEST_F(Safetensors, TooShort) {
  const std::string path = (dir_ / "short.safetensors").string();
  std::ofstream(path) << "abc";
  EXPECT_THROW(load_safetensors(path), Error);
  EXPECT_THROW(load_safetensors((dir_ / "absent.safetensors").string()), Error);
}

TEST_F(Safetensors, HeaderLengthBeyondFile) {
  EXPECT_NE(load_error("{}", "", 1000).find("beyond the file size"), std::string::npos);
}

TEST_F(Safetensors, BadJson) {
  EXPECT_NE(load_error(R"({"x": {"dtype": )", "").find("not valid JSON"), std::string::npos);
  EXPECT_NE(load_error("[1, 2]", "").find("not an object"), std::string::npos);
}

TEST_F(Safetensors, DuplicateNames) {
  const std::string e = R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  EXPECT_NE(load_error("{\"x\":" + e + ",\"x\":" + e + "}", "a").find("duplicate key 'x'"), std::string::npos);
}

TEST_F(Safetensors, UnknownDtype) {
  EXPECT_NE(load_error(R"({"x":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", "a").find("unknown dtype"),
            std::string::npos);
}

TEST_F(Safetensors, ShapeSizeMismatch) {
  EXPECT_NE(load_error(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd").find("needs 8 bytes"),
            std::string::npos);
}

TEST_F(Safetensors, OffsetsOutOfRange) {
  EXPECT_NE(load_error(R"({"x":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})", "abcd").find("beyond the data"),
            std::string::npos);
}

TEST_F(Safetensors, OffsetsOverlap) {
  const std::string h = R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                        R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})";
  EXPECT_NE(load_error(h, "abcdef").find("overlap"), std::string::npos);
}

TEST_F(Safetensors, OffsetsNotCoveringTheBuffer) {
  EXPECT_NE(load_error(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", "abcd").find("tensors cover 2"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})", "abcd").find("belong to no tensor"),
            std::string::npos);
}

TEST_F(Safetensors, MalformedEntries) {
  EXPECT_NE(load_error(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", "").find("non-negative"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}})", "").find("reversed"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"a":{"dtype":"U8","shape":[1]}})", "").find("data_offsets"), std::string::npos);
  EXPECT_NE(load_error(R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":1}})", "").find("unexpected key"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"a":5})", "").find("expected an object"), std::string::npos);
  EXPECT_NE(load_error(R"({"__metadata__":{"k":1}})", "").find("not a string"), std::string::npos);
  EXPECT_NE(load_error(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", "")
                .find("overflows"),
            std::string::npos);
}

}  // namespace
}  // namespace cnn
