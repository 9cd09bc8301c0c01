// JPEG/PNG decoding: grayscale, CMYK and PNG-named-.JPEG files load as RGB; truncated and corrupt data throw an
// error naming the file; DCT scale choice and scaled decode sizes.
#include <gtest/gtest.h>
#include <png.h>

#include "core/error.h"
#include "core/philox.h"
#include "data/image_decode.h"
#include "tests/data/jpeg_tree.h"
#include "data/opencv.h"

namespace cnn {
namespace {

using data::JpegPixels;
using data::ScaleFactor;

// Max |a - b| over all elements of two same-shape 8-bit images.
int max_diff(const cv::Mat& a, const cv::Mat& b) {
  EXPECT_EQ(a.size(), b.size());
  EXPECT_EQ(a.type(), b.type());
  double m = 0;
  cv::Mat d;
  cv::absdiff(a, b, d);
  cv::minMaxLoc(d.reshape(1), nullptr, &m);
  return int(m);
}

cv::Mat noise_image(int w, int h, uint64_t seed) {
  cv::Mat img(h, w, CV_8UC3);
  for (int i = 0; i < w * h * 3; ++i) img.data[i] = uint8_t(rng::philox_for_element(seed, uint64_t(i), 0).v[0]);
  return img;
}

std::string error_of(const std::vector<uint8_t>& bytes, const std::string& name) {
  try {
    data::decode_image(bytes, 3, {}, name);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ImageDecode, RgbJpegRoundTrip) {
  const cv::Mat img = cnn::test::id_image(77, 24, 16);
  const std::vector<uint8_t> jpeg = data::encode_jpeg(img, JpegPixels::rgb, 100);
  EXPECT_EQ(data::detect_format(jpeg), data::ImageFormat::jpeg);
  const data::ImageInfo info = data::peek_image(jpeg, "x.JPEG");
  EXPECT_EQ(info.width, 24);
  EXPECT_EQ(info.height, 16);
  // Quality 100 on a constant image: only rounding in the color transform, at most 1-2 levels.
  EXPECT_LE(max_diff(data::decode_image(jpeg, 3, {}, "x.JPEG"), img), 2);
}

TEST(ImageDecode, GrayscaleJpegDecodesToRgb) {
  cv::Mat gray(12, 20, CV_8UC1);
  for (int y = 0; y < gray.rows; ++y)
    for (int x = 0; x < gray.cols; ++x) gray.at<uint8_t>(y, x) = uint8_t(10 * x + y);
  const std::vector<uint8_t> jpeg = data::encode_jpeg(gray, JpegPixels::gray, 100);
  const cv::Mat rgb = data::decode_image(jpeg, 3, {}, "gray.JPEG");
  ASSERT_EQ(rgb.type(), CV_8UC3);
  cv::Mat channels[3];
  cv::split(rgb, channels);
  for (int c = 0; c < 3; ++c) {
    // Quality 100 luma-only JPEG of a smooth ramp: within 2 levels of the source.
    EXPECT_LE(max_diff(channels[c], gray), 2) << "channel " << c;
  }
}

TEST(ImageDecode, CmykJpegDecodesToRgb) {
  // Adobe convention (inverted): C=255 means no cyan ink, so R = C * K / 255 = 200, G = 128 * 200 / 255 = 100.
  const cv::Mat cmyk(8, 16, CV_8UC4, cv::Scalar(255, 128, 0, 200));
  const std::vector<uint8_t> jpeg = data::encode_jpeg(cmyk, JpegPixels::cmyk, 100);
  const cv::Mat rgb = data::decode_image(jpeg, 3, {}, "cmyk.JPEG");
  ASSERT_EQ(rgb.type(), CV_8UC3);
  const cv::Mat expected(8, 16, CV_8UC3, cv::Scalar(200, 100, 0));
  // YCCK at quality 100: a few levels of color-transform rounding per channel, amplified by the K product.
  EXPECT_LE(max_diff(rgb, expected), 4);
  EXPECT_EQ(data::decode_image(jpeg, 1, {}, "cmyk.JPEG").type(), CV_8UC1);
}

TEST(ImageDecode, PngNamedJpegLoadsByMagicBytes) {
  const cv::Mat rgb = noise_image(13, 9, 5);
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = 13, image.height = 9, image.format = PNG_FORMAT_RGB;
  png_alloc_size_t bytes = 0;
  ASSERT_TRUE(png_image_write_to_memory(&image, nullptr, &bytes, 0, rgb.data, int(rgb.step), nullptr));
  std::vector<uint8_t> png(bytes);
  ASSERT_TRUE(png_image_write_to_memory(&image, png.data(), &bytes, 0, rgb.data, int(rgb.step), nullptr));
  png.resize(bytes);
  EXPECT_EQ(data::detect_format(png), data::ImageFormat::png);
  const data::ImageInfo info = data::peek_image(png, "n02105855_2933.JPEG");
  EXPECT_EQ(info.width, 13);
  EXPECT_EQ(info.height, 9);
  // PNG is lossless: exact.
  EXPECT_EQ(max_diff(data::decode_image(png, 3, {}, "n02105855_2933.JPEG"), rgb), 0);
}

TEST(ImageDecode, TruncatedAndCorruptDataThrowNamingTheFile) {
  const std::vector<uint8_t> jpeg = data::encode_jpeg(noise_image(64, 64, 9), JpegPixels::rgb, 95);
  // Cut inside the entropy-coded scan: libjpeg only warns ("Premature end of JPEG file"), we reject it.
  const std::vector<uint8_t> cut(jpeg.begin(), jpeg.begin() + std::ptrdiff_t(jpeg.size() * 7 / 10));
  const std::string truncated = error_of(cut, "/data/cut.JPEG");
  EXPECT_NE(truncated.find("/data/cut.JPEG"), std::string::npos) << truncated;
  EXPECT_NE(truncated.find("corrupt JPEG"), std::string::npos) << truncated;
  // Header only.
  const std::vector<uint8_t> header(jpeg.begin(), jpeg.begin() + 40);
  EXPECT_NE(error_of(header, "/data/h.JPEG").find("/data/h.JPEG"), std::string::npos);
  // Not an image at all, and an empty file.
  const std::string text = error_of({'h', 'e', 'l', 'l', 'o'}, "/data/t.JPEG");
  EXPECT_NE(text.find("neither JPEG nor PNG"), std::string::npos) << text;
  EXPECT_NE(error_of({}, "/data/e.JPEG").find("empty file"), std::string::npos);
  // A PNG signature with garbage after it.
  std::vector<uint8_t> bad_png{0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  bad_png.resize(64, 0x42);
  EXPECT_NE(error_of(bad_png, "/data/p.JPEG").find("/data/p.JPEG"), std::string::npos);
}

TEST(ImageDecode, AFailedHeaderDoesNotSpoilTheNextDecode) {
  // TurboJPEG 2.1 keeps a failed header read's state in the handle; the next file on this thread must still load.
  const std::vector<uint8_t> good = data::encode_jpeg(cnn::test::id_image(3, 10, 6), JpegPixels::rgb, 100);
  const std::vector<uint8_t> cut(good.begin(), good.begin() + std::ptrdiff_t(good.size() / 2));
  for (int k = 0; k < 3; ++k) {
    EXPECT_THROW(data::decode_image(cut, 3, {}, "cut.JPEG"), Error);
    const data::ImageInfo info = data::peek_image(good, "good.JPEG");
    EXPECT_EQ(info.width, 10);
    EXPECT_EQ(info.height, 6);
    EXPECT_EQ(data::decode_image(good, 3, {}, "good.JPEG").cols, 10);
  }
}

TEST(ImageDecode, ReadFileErrorsNameThePath) {
  try {
    data::read_file("/nonexistent/dir/x.JPEG");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.JPEG"), std::string::npos) << e.what();
  }
}

TEST(ImageDecode, ChooseScaleKeepsTheRegionAtLeastTheOutput) {
  // 375 * 5/8 = 234 >= 224 while 375 * 1/2 = 187 is too small.
  const ScaleFactor s = data::choose_jpeg_scale(500, 375, 224, 224);
  EXPECT_EQ(s.num * 8, s.denom * 5) << s.num << "/" << s.denom;
  const ScaleFactor q = data::choose_jpeg_scale(1000, 1000, 224, 224);
  EXPECT_EQ(q.num * 4, q.denom) << q.num << "/" << q.denom;
  const ScaleFactor one = data::choose_jpeg_scale(100, 300, 224, 224);
  EXPECT_EQ(one.num, one.denom);
  const ScaleFactor eighth = data::choose_jpeg_scale(4000, 4000, 100, 100);
  EXPECT_EQ(eighth.num * 8, eighth.denom);
  // Exhaustive property over a grid: the chosen factor covers, and the next smaller one would not.
  for (int r = 8; r <= 2000; r += 37) {
    const ScaleFactor f = data::choose_jpeg_scale(r, r, 64, 64);
    EXPECT_TRUE(r < 64 || int64_t(r) * f.num >= 64 * int64_t(f.denom)) << "region " << r;
  }
}

TEST(ImageDecode, ScaledDecodeHasScaledSize) {
  const std::vector<uint8_t> jpeg = data::encode_jpeg(noise_image(101, 67, 3), JpegPixels::rgb, 90);
  for (ScaleFactor s : {ScaleFactor{1, 1}, ScaleFactor{1, 2}, ScaleFactor{3, 8}, ScaleFactor{1, 8}}) {
    const cv::Mat img = data::decode_image(jpeg, 3, s, "s.JPEG");
    EXPECT_EQ(img.cols, data::scaled_dim(101, s)) << s.num << "/" << s.denom;
    EXPECT_EQ(img.rows, data::scaled_dim(67, s)) << s.num << "/" << s.denom;
  }
  EXPECT_THROW(data::decode_image(jpeg, 3, ScaleFactor{1, 3}, "s.JPEG"), Error);
}

}  // namespace
}  // namespace cnn
