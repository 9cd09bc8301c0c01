// Augmentation geometry (torchvision semantics), DCT-scale planning and normalization into batch rows.
#include "data/transforms.h"

#include <algorithm>
#include <cmath>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/error.h"
#include "data/image_decode.h"
#include "data/opencv.h"

namespace cnn::data {

namespace {

constexpr int kCropTries = 10;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

int round_half_even(double v) { return int(std::nearbyint(v)); }

// Output pixel of the region's integer bounds after scaling by (sx, sy), clamped to the image, at least 1 pixel.
cv::Rect scale_rect(const CropRect& r, double sx, double sy, int cols, int rows) {
  const int x0 = std::clamp(int(std::lround(r.x * sx)), 0, cols - 1);
  const int y0 = std::clamp(int(std::lround(r.y * sy)), 0, rows - 1);
  const int x1 = std::clamp(int(std::lround((r.x + r.w) * sx)), x0 + 1, cols);
  const int y1 = std::clamp(int(std::lround((r.y + r.h) * sy)), y0 + 1, rows);
  return cv::Rect(x0, y0, x1 - x0, y1 - y0);
}

cv::Mat resize_to(const cv::Mat& img, cv::Size size) {
  if (img.size() == size) return img;
  cv::Mat out;
  cv::resize(img, out, size, 0, 0, cv::INTER_LINEAR);
  return out;
}

// Decoded size needed for the plan: the region (train) or the whole image (eval, none) must keep at least the
// pixels the next resize produces, so that the resize only ever shrinks.
ScaleFactor plan_scale(int width, int height, const SamplePlan& plan, const TransformConfig& c) {
  if (!c.dct_scaling) return {};
  const int s = c.image_size;
  switch (c.augment) {
    case Augment::train:
      return choose_jpeg_scale(plan.region.w, plan.region.h, s, s);
    case Augment::eval: {
      const cv::Size r = eval_resized_size(width, height, c);
      return choose_jpeg_scale(width, height, r.width, r.height);
    }
    case Augment::none:
      return choose_jpeg_scale(width, height, s, s);
  }
  return {};
}

// One output row; C channels (1 or 3) known at compile time, so the inner loop unrolls and reads stay in bounds.
template <int C>
void normalize_row(const uint8_t* src, int w, bool flip, const float* scale, const float* shift, float* dst) {
  for (int x = 0; x < w; ++x) {
    const uint8_t* p = src + (flip ? w - 1 - x : x) * C;
    for (int k = 0; k < C; ++k) dst[x * C + k] = float(p[k]) * scale[k] + shift[k];
  }
}

#if defined(__x86_64__)
// F16C rounds to nearest even like float_to_half_bits, so both paths give identical bits.
__attribute__((target("avx,f16c"))) void floats_to_half_f16c(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}
#endif

void floats_to_half(const float* src, uint16_t* dst, int64_t n) {
#if defined(__x86_64__)
  static const bool has_f16c = __builtin_cpu_supports("f16c");
  if (has_f16c) {
    floats_to_half_f16c(src, dst, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}

}  // namespace

uint64_t derive_key(uint64_t seed, uint64_t domain) { return splitmix64(seed ^ splitmix64(domain)); }

SampleRng::SampleRng(uint64_t seed, uint64_t epoch, int64_t index) {
  const uint64_t key = derive_key(seed, kAugmentDomain);
  c0_ = uint32_t(uint64_t(index));
  c1_ = uint32_t(uint64_t(index) >> 32);
  c2_ = uint32_t(epoch);
  k0_ = uint32_t(key);
  k1_ = uint32_t(key >> 32);
}

rng::Philox4 SampleRng::block(uint32_t b) const { return rng::philox4x32_10(rng::Philox4{{c0_, c1_, c2_, b}}, k0_, k1_); }

CropRect center_crop_fallback(int width, int height, const CropSpec& spec) {
  const double in_ratio = double(width) / double(height);
  int w = width, h = height;
  if (in_ratio < spec.min_ratio) {
    h = round_half_even(w / spec.min_ratio);
  } else if (in_ratio > spec.max_ratio) {
    w = round_half_even(h * spec.max_ratio);
  }
  w = std::clamp(w, 1, width);
  h = std::clamp(h, 1, height);
  return CropRect{(width - w) / 2, (height - h) / 2, w, h};
}

CropRect random_resized_crop_rect(int width, int height, const CropSpec& spec, const SampleRng& rng,
                                  bool* fell_back) {
  const double area = double(width) * double(height);
  const double log_lo = std::log(spec.min_ratio), log_hi = std::log(spec.max_ratio);
  for (int t = 0; t < kCropTries; ++t) {
    const rng::Philox4 r = rng.block(uint32_t(1 + t));
    const double target = area * (spec.min_scale + SampleRng::unit(r.v[0]) * (spec.max_scale - spec.min_scale));
    const double ratio = std::exp(log_lo + SampleRng::unit(r.v[1]) * (log_hi - log_lo));
    const int w = round_half_even(std::sqrt(target * ratio));
    const int h = round_half_even(std::sqrt(target / ratio));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      if (fell_back != nullptr) *fell_back = false;
      const int y = int(SampleRng::below(r.v[2], height - h + 1));
      const int x = int(SampleRng::below(r.v[3], width - w + 1));
      return CropRect{x, y, w, h};
    }
  }
  if (fell_back != nullptr) *fell_back = true;
  return center_crop_fallback(width, height, spec);
}

bool random_flip(const SampleRng& rng, double p) { return SampleRng::unit(rng.block(0).v[0]) < p; }

Augment parse_augment(const std::string& s) {
  if (s == "train") return Augment::train;
  if (s == "eval") return Augment::eval;
  if (s == "none") return Augment::none;
  throw Error(str_cat("augment: expected 'train', 'eval' or 'none', got '", s, "'"));
}

void validate(const TransformConfig& c) {
  CNN_CHECK(c.image_size >= 1 && c.image_size <= 8192, "transform: image_size must be in [1, 8192], got ",
            c.image_size);
  CNN_CHECK(c.channels == 1 || c.channels == 3, "transform: channels must be 1 or 3, got ", c.channels);
  CNN_CHECK(int(c.mean.size()) == c.channels && int(c.std.size()) == c.channels, "transform: mean and std need ",
            c.channels, " values each, got ", c.mean.size(), " and ", c.std.size());
  for (float s : c.std) CNN_CHECK(s > 0.0f, "transform: std values must be > 0, got ", s);
  CNN_CHECK(c.crop.min_scale > 0 && c.crop.min_scale <= c.crop.max_scale && c.crop.max_scale <= 1.0,
            "transform: crop scale needs 0 < min <= max <= 1, got [", c.crop.min_scale, ", ", c.crop.max_scale, "]");
  CNN_CHECK(c.crop.min_ratio > 0 && c.crop.min_ratio <= c.crop.max_ratio, "transform: crop ratio needs 0 < min <= max,"
            " got [", c.crop.min_ratio, ", ", c.crop.max_ratio, "]");
  CNN_CHECK(c.flip_p >= 0 && c.flip_p <= 1, "transform: flip_p must be in [0, 1], got ", c.flip_p);
  CNN_CHECK(c.eval_crop_ratio > 0 && c.eval_crop_ratio <= 1, "transform: eval_crop_ratio must be in (0, 1], got ",
            c.eval_crop_ratio);
}

int eval_short_side(const TransformConfig& c) {
  return std::max(c.image_size, int(std::floor(c.image_size / c.eval_crop_ratio + 1e-9)));
}

cv::Size eval_resized_size(int width, int height, const TransformConfig& c) {
  const int s = eval_short_side(c);
  if (width <= height) return cv::Size(s, std::max(s, int(int64_t(s) * height / width)));
  return cv::Size(std::max(s, int(int64_t(s) * width / height)), s);
}

SamplePlan plan_sample(int width, int height, const TransformConfig& c, const SampleRng& rng) {
  SamplePlan plan;
  switch (c.augment) {
    case Augment::train:
      plan.region = random_resized_crop_rect(width, height, c.crop, rng);
      plan.flip = random_flip(rng, c.flip_p);
      break;
    case Augment::eval: {
      // The part of the original that the center crop keeps (used for reporting and scale planning).
      const cv::Size r = eval_resized_size(width, height, c);
      const double sx = double(width) / r.width, sy = double(height) / r.height;
      const int cw = int(std::lround(c.image_size * sx)), ch = int(std::lround(c.image_size * sy));
      plan.region = CropRect{(width - cw) / 2, (height - ch) / 2, cw, ch};
      break;
    }
    case Augment::none:
      plan.region = CropRect{0, 0, width, height};
      break;
  }
  return plan;
}

cv::Mat apply_geometry(const cv::Mat& img, int orig_w, int orig_h, const SamplePlan& plan, const TransformConfig& c) {
  const cv::Size out(c.image_size, c.image_size);
  switch (c.augment) {
    case Augment::train: {
      const cv::Rect r = scale_rect(plan.region, double(img.cols) / orig_w, double(img.rows) / orig_h, img.cols,
                                    img.rows);
      return resize_to(img(r), out);
    }
    case Augment::eval: {
      const cv::Size rs = eval_resized_size(orig_w, orig_h, c);
      const cv::Mat resized = resize_to(img, rs);
      // torchvision center_crop: offset round((size - crop) / 2).
      const int x = round_half_even((rs.width - c.image_size) / 2.0);
      const int y = round_half_even((rs.height - c.image_size) / 2.0);
      return resized(cv::Rect(x, y, c.image_size, c.image_size));
    }
    case Augment::none:
      return resize_to(img, out);
  }
  return img;
}

void write_normalized(const cv::Mat& img, bool flip, const TransformConfig& c, DType dtype, void* dst) {
  CNN_CHECK(img.depth() == CV_8U && img.channels() == c.channels && img.cols == c.image_size &&
                img.rows == c.image_size,
            "write_normalized: expected a ", c.image_size, "x", c.image_size, "x", c.channels, " u8 image, got ",
            img.cols, "x", img.rows, "x", img.channels(), " depth ", img.depth());
  float scale[3] = {}, shift[3] = {};
  for (int k = 0; k < c.channels; ++k) {
    scale[k] = 1.0f / (255.0f * c.std[size_t(k)]);
    shift[k] = -c.mean[size_t(k)] / c.std[size_t(k)];
  }
  CNN_CHECK(dtype == DType::f32 || dtype == DType::f16, "write_normalized: output dtype must be f32 or f16, got ",
            dtype_name(dtype));
  const int w = img.cols, row_elems = w * c.channels;
  thread_local std::vector<float> scratch;  // one f32 row before its conversion to f16
  if (dtype == DType::f16) scratch.resize(size_t(row_elems));
  for (int y = 0; y < img.rows; ++y) {
    float* out = dtype == DType::f32 ? static_cast<float*>(dst) + int64_t(y) * row_elems : scratch.data();
    if (c.channels == 3) {
      normalize_row<3>(img.ptr<uint8_t>(y), w, flip, scale, shift, out);
    } else {
      normalize_row<1>(img.ptr<uint8_t>(y), w, flip, scale, shift, out);
    }
    if (dtype == DType::f16) floats_to_half(out, static_cast<uint16_t*>(dst) + int64_t(y) * row_elems, row_elems);
  }
}

void transform_encoded(const std::vector<uint8_t>& bytes, const std::string& name, const TransformConfig& c,
                       const SampleRng& rng, DType dtype, void* dst) {
  const ImageInfo info = peek_image(bytes, name);
  const SamplePlan plan = plan_sample(info.width, info.height, c, rng);
  const ScaleFactor scale = info.format == ImageFormat::jpeg ? plan_scale(info.width, info.height, plan, c)
                                                             : ScaleFactor{};
  const cv::Mat img = decode_image(bytes, c.channels, scale, name);
  write_normalized(apply_geometry(img, info.width, info.height, plan, c), plan.flip, c, dtype, dst);
}

void transform_pixels(const cv::Mat& img, const TransformConfig& c, const SampleRng& rng, DType dtype, void* dst) {
  CNN_CHECK(img.depth() == CV_8U && img.channels() == c.channels && !img.empty(), "transform: expected a u8 image "
            "with ", c.channels, " channels, got ", img.cols, "x", img.rows, "x", img.channels());
  const SamplePlan plan = plan_sample(img.cols, img.rows, c, rng);
  write_normalized(apply_geometry(img, img.cols, img.rows, plan, c), plan.flip, c, dtype, dst);
}

}  // namespace cnn::data
