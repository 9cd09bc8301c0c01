// Per-sample augmentation on 8-bit HWC images (OpenCV imgproc): RandomResizedCrop + horizontal flip (train),
// resize short side + center crop (eval), then mean/std normalization into one NHWC f32 or f16 batch row.
// Randomness comes from SampleRng(seed, epoch, index), so a sample's augmentation never depends on thread timing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/philox.h"
#include "data/opencv.h"

namespace cnn::data {

// Philox stream of one sample: block b uses counter (lo32(index), hi32(index), lo32(epoch), b) and a key derived
// from the seed. Block 0 drives the flip, blocks 1..10 the RandomResizedCrop tries.
class SampleRng {
 public:
  SampleRng(uint64_t seed, uint64_t epoch, int64_t index);
  rng::Philox4 block(uint32_t b) const;
  static double unit(uint32_t word) { return double(word) * (1.0 / 4294967296.0); }  // [0, 1)
  // Uniform integer in [0, n) (n >= 1) from one word.
  static int64_t below(uint32_t word, int64_t n) { return int64_t((uint64_t(word) * uint64_t(n)) >> 32); }

 private:
  uint32_t c0_, c1_, c2_, k0_, k1_;
};

// Derives a Philox key for one use of a seed (augmentation, permutation, synthetic pixels) so streams never meet.
uint64_t derive_key(uint64_t seed, uint64_t domain);
inline constexpr uint64_t kAugmentDomain = 1, kPermutationDomain = 2, kSyntheticDomain = 3;

struct CropRect {
  int x = 0, y = 0, w = 0, h = 0;
  bool operator==(const CropRect&) const = default;
};

struct CropSpec {
  double min_scale = 0.08;  // fraction of the image area
  double max_scale = 1.0;
  double min_ratio = 3.0 / 4.0;  // width / height, drawn log-uniformly
  double max_ratio = 4.0 / 3.0;
};

// torchvision RandomResizedCrop.get_params: 10 tries of (area fraction ~ U(min_scale, max_scale), log ratio ~
// U(log min_ratio, log max_ratio)), w = round(sqrt(area * ratio)), h = round(sqrt(area / ratio)), accepted when
// it fits, at a uniform position; else the center crop of center_crop_fallback. `fell_back` reports which.
CropRect random_resized_crop_rect(int width, int height, const CropSpec& spec, const SampleRng& rng,
                                  bool* fell_back = nullptr);
// The whole image with its ratio clamped into [min_ratio, max_ratio], centered.
CropRect center_crop_fallback(int width, int height, const CropSpec& spec);
// True with probability p (Philox block 0, word 0).
bool random_flip(const SampleRng& rng, double p);

enum class Augment {
  train,  // RandomResizedCrop to image_size + horizontal flip
  eval,   // resize short side to round(image_size / eval_crop_ratio), center crop image_size
  none    // resize the whole image to image_size x image_size (a no-op when it already has that size)
};
Augment parse_augment(const std::string& s);  // "train" | "eval" | "none"

struct TransformConfig {
  Augment augment = Augment::train;
  int image_size = 224;
  int channels = 3;  // 3: RGB, 1: gray
  CropSpec crop;
  double flip_p = 0.5;
  double eval_crop_ratio = 0.875;
  // Per channel, on the [0, 1] pixel scale. The loader fills empty ones with the data set's defaults.
  std::vector<float> mean;
  std::vector<float> std;
  bool dct_scaling = true;  // decode JPEGs at the smallest DCT scale that keeps the crop >= image_size
};
// Throws a one-line cnn::Error naming the field for an invalid configuration.
void validate(const TransformConfig& c);

// Eval geometry: the size of the short side after the eval resize, and the resized (w, h) of a width x height image.
int eval_short_side(const TransformConfig& c);
cv::Size eval_resized_size(int width, int height, const TransformConfig& c);

// The augmentation's geometry for an image of width x height: the region of the original image that maps to the
// output (train: the crop; eval: the center square; none: the whole image) and the flip.
struct SamplePlan {
  CropRect region;
  bool flip = false;
};
SamplePlan plan_sample(int width, int height, const TransformConfig& c, const SampleRng& rng);

// Applies `plan` (made for an original of orig_w x orig_h) to `img`, which may be a DCT-downscaled decode of it;
// returns image_size x image_size 8-bit pixels, not yet flipped.
cv::Mat apply_geometry(const cv::Mat& img, int orig_w, int orig_h, const SamplePlan& plan, const TransformConfig& c);

// Writes (pixel / 255 - mean[c]) / std[c] as `dtype` (f32 or f16) to dst, HWC, mirroring columns when `flip`.
void write_normalized(const cv::Mat& img, bool flip, const TransformConfig& c, DType dtype, void* dst);

// Whole per-sample path. Encoded bytes: header, plan, DCT-scaled decode, geometry, normalize. Pixels: the same
// without decoding. `dst` receives image_size * image_size * channels elements of `dtype`.
void transform_encoded(const std::vector<uint8_t>& bytes, const std::string& name, const TransformConfig& c,
                       const SampleRng& rng, DType dtype, void* dst);
void transform_pixels(const cv::Mat& img, const TransformConfig& c, const SampleRng& rng, DType dtype, void* dst);

}  // namespace cnn::data
