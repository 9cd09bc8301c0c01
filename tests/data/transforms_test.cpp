// Augmentation geometry: RandomResizedCrop size and area/ratio bounds (statistically), its fallback, flip on an
// asymmetric image, eval resize + center crop of a known image, DCT-scaled decode vs full decode, normalization.
#include <gtest/gtest.h>

#include <cmath>

#include "core/dtype.h"
#include "core/error.h"
#include "data/image_decode.h"
#include "data/transforms.h"
#include "data/opencv.h"

namespace cnn {
namespace {

using data::Augment;
using data::CropRect;
using data::SampleRng;
using data::TransformConfig;

TransformConfig config(Augment a, int size, int channels) {
  TransformConfig c;
  c.augment = a;
  c.image_size = size;
  c.channels = channels;
  c.mean.assign(size_t(channels), 0.0f);  // mean 0, std 1: outputs are pixel / 255
  c.std.assign(size_t(channels), 1.0f);
  return c;
}

// Runs transform_pixels and returns the output as 8-bit values (round(v * 255)).
cv::Mat run(const cv::Mat& img, const TransformConfig& c, const SampleRng& rng) {
  std::vector<float> out(size_t(c.image_size) * c.image_size * c.channels + 16, -7.0f);
  data::transform_pixels(img, c, rng, DType::f32, out.data());
  for (size_t i = out.size() - 16; i < out.size(); ++i) EXPECT_EQ(out[i], -7.0f) << "wrote past the row at " << i;
  cv::Mat m(c.image_size, c.image_size, c.channels == 3 ? CV_8UC3 : CV_8UC1);
  for (int i = 0; i < c.image_size * c.image_size * c.channels; ++i) m.data[i] = uint8_t(std::lround(out[size_t(i)] * 255));
  return m;
}

// Pixel (x, y) of the asymmetric test pattern: R = 7x + 3y, G = 5y, B = (x * y) mod 251.
cv::Mat pattern(int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) m.at<cv::Vec3b>(y, x) = cv::Vec3b(uint8_t(7 * x + 3 * y), uint8_t(5 * y), uint8_t(x * y % 251));
  return m;
}

TEST(Transforms, RandomResizedCropAreaAndRatioBounds) {
  const data::CropSpec spec;  // scale [0.08, 1], ratio [3/4, 4/3]
  const int w = 1000, h = 800;
  double min_area = 1, max_area = 0;
  int below_one = 0, accepted = 0;
  const int kDraws = 4000;
  for (int i = 0; i < kDraws; ++i) {
    bool fell_back = true;
    const CropRect r = data::random_resized_crop_rect(w, h, spec, SampleRng(42, 0, i), &fell_back);
    ASSERT_TRUE(r.x >= 0 && r.y >= 0 && r.w >= 1 && r.h >= 1 && r.x + r.w <= w && r.y + r.h <= h)
        << "seed 42 index " << i << ": rect " << r.x << "," << r.y << " " << r.w << "x" << r.h;
    if (fell_back) continue;
    ++accepted;
    const double area = double(r.w) * r.h / (double(w) * h), ratio = double(r.w) / r.h;
    // w and h are rounded to integers: the bounds hold up to about one pixel per side (1% at w, h >= 200).
    EXPECT_GE(area, 0.08 * 0.98) << "index " << i;
    EXPECT_LE(area, 1.0) << "index " << i;
    EXPECT_GE(ratio, 0.75 * 0.98) << "index " << i;
    EXPECT_LE(ratio, 4.0 / 3.0 * 1.02) << "index " << i;
    min_area = std::min(min_area, area);
    max_area = std::max(max_area, area);
    below_one += ratio < 1.0;
  }
  // Nearly every draw succeeds on a 5:4 image within 10 tries.
  EXPECT_GT(accepted, kDraws * 99 / 100);
  // Uniform area fraction: 4000 draws reach both ends of [0.08, 1] closely.
  EXPECT_LT(min_area, 0.09);
  EXPECT_GT(max_area, 0.9);
  // Log-uniform ratio over [3/4, 4/3] is symmetric around 1; the 5:4 image rejects more wide crops, so allow
  // 40-65% (binomial sd at n=4000 is 0.8%; the rest is the acceptance asymmetry).
  EXPECT_GT(below_one, accepted * 40 / 100);
  EXPECT_LT(below_one, accepted * 65 / 100);
}

TEST(Transforms, RandomResizedCropFallsBackToCenterCrop) {
  // 10 x 1000: every crop of at least 8% of the area with ratio >= 3/4 is wider than 10, so all 10 tries fail and
  // the fallback takes the full width with the ratio clamped to 3/4: 10 x round(10 / 0.75) = 10 x 13, centered.
  bool fell_back = false;
  const CropRect r = data::random_resized_crop_rect(10, 1000, data::CropSpec{}, SampleRng(1, 2, 3), &fell_back);
  EXPECT_TRUE(fell_back);
  EXPECT_EQ(r, (CropRect{0, 493, 10, 13}));
  EXPECT_EQ(data::center_crop_fallback(1000, 10, data::CropSpec{}), (CropRect{493, 0, 13, 10}));
  EXPECT_EQ(data::center_crop_fallback(40, 40, data::CropSpec{}), (CropRect{0, 0, 40, 40}));
}

TEST(Transforms, TrainOutputHasImageSize) {
  const cv::Mat img = pattern(97, 61);
  const TransformConfig c = config(Augment::train, 32, 3);
  for (int i = 0; i < 20; ++i) {
    const cv::Mat out = run(img, c, SampleRng(3, 1, i));
    EXPECT_EQ(out.cols, 32);
  }
}

TEST(Transforms, FlipMirrorsAnAsymmetricImage) {
  // Crop fixed to the whole square image (scale 1, ratio 1), flip forced: the output is the exact mirror.
  const cv::Mat img = pattern(8, 8);
  TransformConfig c = config(Augment::train, 8, 3);
  c.crop = data::CropSpec{1.0, 1.0, 1.0, 1.0};
  c.flip_p = 1.0;
  const cv::Mat flipped = run(img, c, SampleRng(0, 0, 0));
  c.flip_p = 0.0;
  const cv::Mat kept = run(img, c, SampleRng(0, 0, 0));
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 8; ++x) {
      ASSERT_EQ(flipped.at<cv::Vec3b>(y, x), img.at<cv::Vec3b>(y, 7 - x)) << "flipped at x " << x << " y " << y;
      ASSERT_EQ(kept.at<cv::Vec3b>(y, x), img.at<cv::Vec3b>(y, x)) << "kept at x " << x << " y " << y;
    }
  }
  // p = 0.5: about half of many samples flip (binomial sd 1.6% at n = 1000; bounds at 5 sd).
  int flips = 0;
  for (int i = 0; i < 1000; ++i) flips += data::random_flip(SampleRng(9, 0, i), 0.5);
  EXPECT_GT(flips, 420);
  EXPECT_LT(flips, 580);
}

TEST(Transforms, EvalCenterCropOfAKnownImage) {
  // size 16, ratio 0.875: short side floor(16 / 0.875) = 18.
  TransformConfig c = config(Augment::eval, 16, 3);
  EXPECT_EQ(data::eval_short_side(c), 18);
  // A 24x18 image needs no resize; the crop starts at (round(8 / 2), round(2 / 2)) = (4, 1).
  const cv::Mat img = pattern(24, 18);
  cv::Mat out = run(img, c, SampleRng(0, 0, 0));
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) ASSERT_EQ(out.at<cv::Vec3b>(y, x), img.at<cv::Vec3b>(y + 1, x + 4)) << x << "," << y;
  // 48x36 made of 2x2 constant blocks: bilinear halving averages within blocks, so it yields the 24x18 image
  // exactly, and the crop must match the one above.
  cv::Mat big;
  cv::resize(img, big, cv::Size(48, 36), 0, 0, cv::INTER_NEAREST);
  out = run(big, c, SampleRng(0, 0, 0));
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) ASSERT_EQ(out.at<cv::Vec3b>(y, x), img.at<cv::Vec3b>(y + 1, x + 4)) << x << "," << y;
  // Portrait images: the short side is the width.
  EXPECT_EQ(data::eval_resized_size(30, 60, c), cv::Size(18, 36));
}

TEST(Transforms, NoneResizesWholeImage) {
  const cv::Mat img = pattern(10, 10);
  const cv::Mat out = run(img, config(Augment::none, 10, 3), SampleRng(0, 0, 0));
  for (int y = 0; y < 10; ++y)
    for (int x = 0; x < 10; ++x) ASSERT_EQ(out.at<cv::Vec3b>(y, x), img.at<cv::Vec3b>(y, x));
}

TEST(Transforms, DctScaledDecodeMatchesFullDecode) {
  // A smooth 640x480 gradient: decoding at a DCT scale and mapping the crop must give nearly the full-size result.
  cv::Mat img(480, 640, CV_8UC3);
  for (int y = 0; y < 480; ++y)
    for (int x = 0; x < 640; ++x) img.at<cv::Vec3b>(y, x) = cv::Vec3b(uint8_t(x * 255 / 639), uint8_t(y * 255 / 479), 128);
  const std::vector<uint8_t> jpeg = data::encode_jpeg(img, data::JpegPixels::rgb, 95);
  for (Augment a : {Augment::train, Augment::eval}) {
    TransformConfig c = config(a, 64, 3);
    for (int i = 0; i < 8; ++i) {
      std::vector<float> scaled(64 * 64 * 3), full(64 * 64 * 3);
      c.dct_scaling = true;
      data::transform_encoded(jpeg, "g.JPEG", c, SampleRng(5, 0, i), DType::f32, scaled.data());
      c.dct_scaling = false;
      data::transform_encoded(jpeg, "g.JPEG", c, SampleRng(5, 0, i), DType::f32, full.data());
      double max_err = 0;
      for (size_t k = 0; k < scaled.size(); ++k) max_err = std::max(max_err, double(std::abs(scaled[k] - full[k])));
      // One decoded pixel of misplacement at scale 1/2..1/8 moves a 0.4-level/pixel gradient by under 4 levels;
      // a wrongly mapped crop would move it by tens of levels.
      EXPECT_LT(max_err * 255, 6.0) << "augment " << int(a) << " index " << i;
    }
  }
}

TEST(Transforms, NormalizationAndHalfOutput) {
  const cv::Mat img(2, 2, CV_8UC1, cv::Scalar(200));
  TransformConfig c = config(Augment::none, 2, 1);
  c.mean = {0.2860f};
  c.std = {0.3530f};
  std::vector<float> f(4);
  data::transform_pixels(img, c, SampleRng(0, 0, 0), DType::f32, f.data());
  const double expected = (200.0 / 255.0 - 0.2860) / 0.3530;
  // float arithmetic of (p * scale + shift): within a few float ulps of the double value.
  EXPECT_NEAR(f[0], expected, 1e-5);
  std::vector<uint16_t> h(4);
  data::transform_pixels(img, c, SampleRng(0, 0, 0), DType::f16, h.data());
  EXPECT_EQ(h[3], float_to_half_bits(f[3]));
  EXPECT_THROW(data::transform_pixels(img, c, SampleRng(0, 0, 0), DType::i32, h.data()), Error);
}

TEST(Transforms, ConfigErrorsNameTheField) {
  TransformConfig c = config(Augment::train, 0, 3);
  try {
    data::validate(c);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("image_size"), std::string::npos) << e.what();
  }
  c = config(Augment::train, 8, 3);
  c.crop.min_scale = 0;
  EXPECT_THROW(data::validate(c), Error);
  EXPECT_THROW(data::parse_augment("random"), Error);
}

TEST(Transforms, SampleRngDependsOnSeedEpochIndex) {
  const auto w = [](uint64_t s, uint64_t e, int64_t i) { return SampleRng(s, e, i).block(1).v[0]; };
  EXPECT_EQ(w(1, 2, 3), w(1, 2, 3));
  EXPECT_NE(w(1, 2, 3), w(2, 2, 3));
  EXPECT_NE(w(1, 2, 3), w(1, 3, 3));
  EXPECT_NE(w(1, 2, 3), w(1, 2, 4));
}

}  // namespace
}  // namespace cnn
