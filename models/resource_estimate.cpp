// Per-family parameter and activation counts from the config structs (the layer lists of convnext.cpp,
// convmixer.cpp, replknet.cpp and slak.cpp, summed in doubles so no config can overflow them).
#include "models/resource_estimate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace cnn {

namespace {

// Accumulates parts and remembers the largest one's key.
struct Tally {
  ResourceEstimate e;
  double largest = -1;

  void part(const std::string& key, double params, double activations) {
    e.parameters += params;
    e.activation_floats_per_image += activations;
    if (params + activations > largest) {
      largest = params + activations;
      e.largest_key = key;
    }
  }
};

double sq(double v) { return v * v; }

// Feature-map side after a stride-s, kernel-s patch conv (unpadded: floor).
double patch_side(double side, double stride) { return std::floor(side / stride); }

// One stage of a ConvNeXt-shaped network (ConvNeXt, SLaK): for i > 0 a LayerNorm + 2x2 stride-2 conv from `prev`
// to `d` channels, then `depth` blocks of the given per-block parameters and per-pixel activations (a function of
// the stage's side).
void layernorm_stage(Tally& t, size_t i, double prev, double d, int64_t depth, double& side, double block_params,
                     double block_acts_per_pixel) {
  double params = 0, acts = 0;
  if (i > 0) {
    side = patch_side(side, 2);
    t.e.downsampling *= 2;
    params += 2 * prev + 4 * prev * d + d;
    acts += sq(side) * d * 2;
  }
  params += double(depth) * block_params;
  acts += double(depth) * sq(side) * block_acts_per_pixel;
  t.e.blocks += depth;
  t.part(str_cat("stages[", i, "]"), params, acts);
}

ResourceEstimate estimate(const ConvNeXtConfig& c, double side) {
  Tally t;
  const double in = c.common.in_channels, d0 = c.stages[0].dim;
  side = patch_side(side, c.patch_size);
  t.part("patch_size", sq(c.patch_size) * in * d0 + 3 * d0, sq(side) * d0 * 2);
  t.e.downsampling = c.patch_size;
  for (size_t i = 0; i < c.stages.size(); ++i) {
    const double d = c.stages[i].dim, k = c.stages[i].kernel_size, r = c.mlp_ratio;
    // Block: depthwise conv, LayerNorm, fc1, GELU, fc2, LayerScale; saved: dw out, LN out, fc1 out, GELU out,
    // fc2 out, scaled.
    layernorm_stage(t, i, i > 0 ? c.stages[i - 1].dim : 0, d, c.stages[i].depth, side,
                    sq(k) * d + d + 2 * d + 2 * r * d * d + r * d + d + d, d * (5 + 2 * r));
  }
  const double last = c.stages.back().dim;
  t.part("num_classes", 2 * last + last * c.common.num_classes + c.common.num_classes, 0);
  return t.e;
}

ResourceEstimate estimate(const ConvMixerConfig& c, double side) {
  Tally t;
  const double h = c.dim;
  side = patch_side(side, c.patch_size);
  t.e.downsampling = c.patch_size;
  t.part("patch_size", sq(c.patch_size) * c.common.in_channels * h + 3 * h, sq(side) * h * 3);
  // Block: depthwise conv + act + BN + residual, pointwise conv + act + BN.
  t.part("depth", c.depth * (sq(c.kernel_size) * h + 3 * h + h * h + 3 * h), c.depth * sq(side) * h * 8);
  t.part("num_classes", h * c.common.num_classes + c.common.num_classes, 0);
  return t.e;
}

ResourceEstimate estimate(const RepLKNetConfig& c, double side) {
  Tally t;
  const double in = c.common.in_channels, base = c.stages[0].channels;
  t.part("stages[0].channels", 9 * in * base + 9 * base + base * base + 9 * base + 8 * base,
         sq(side / 2) * base * 9 + sq(side / 4) * base * 3);
  side = std::ceil(side / 4);
  t.e.downsampling = 4;
  for (size_t i = 0; i < c.stages.size(); ++i) {
    const double ch = c.stages[i].channels, dw = std::floor(ch * c.dw_ratio), ffn = std::floor(ch * c.ffn_ratio);
    const double k = c.stages[i].kernel_size, s = c.small_kernel;
    double params = 0, acts = 0;
    if (i > 0) {
      const double prev = c.stages[i - 1].channels;
      params += prev * ch + 2 * ch + 9 * ch + 2 * ch;
      acts += sq(side) * ch * 3;
      side = std::ceil(side / 2);
      t.e.downsampling *= 2;
      acts += sq(side) * ch * 3;
    }
    const double lk_params = 2 * ch + ch * dw + 2 * dw + (sq(k) + sq(s)) * dw + 4 * dw + dw * ch + 2 * ch;
    const double ffn_params = 2 * ch + ch * ffn + 2 * ffn + ffn * ch + 2 * ch;
    params += c.stages[i].depth * (lk_params + ffn_params);
    acts += c.stages[i].depth * sq(side) * (ch * 4 + dw * 6 + ffn * 3);
    t.e.blocks += 2 * int64_t(c.stages[i].depth);
    t.part(str_cat("stages[", i, "]"), params, acts);
  }
  const double last = c.stages.back().channels;
  t.part("num_classes", 2 * last + last * c.common.num_classes + c.common.num_classes, 0);
  return t.e;
}

ResourceEstimate estimate(const SLaKConfig& c, double side) {
  Tally t;
  const double w0 = c.width(0);
  side = patch_side(side, 4);
  t.e.downsampling = 4;
  t.part("stages[0].dim", 16 * c.common.in_channels * w0 + 3 * w0, sq(side) * w0 * 2);
  for (size_t i = 0; i < c.stages.size(); ++i) {
    const double w = c.width(i), k = c.stages[i].kernel_size, s = c.small_kernel;
    const double lk = c.decomposed ? 2 * k * s + sq(s) : sq(k) + sq(s);
    // Block: the large-kernel branches with their BatchNorms, LayerNorm, fc1, GELU, fc2, LayerScale; saved: three
    // branches and their BN outputs, LN, fc1, GELU, fc2.
    layernorm_stage(t, i, i > 0 ? c.width(i - 1) : 0, w, c.stages[i].depth, side,
                    lk * w + 12 * w + 8 * w * w + 4 * w + w + 3 * w, w * 16);
  }
  const double last = c.width(c.stages.size() - 1);
  t.part("num_classes", 2 * last + last * c.common.num_classes + c.common.num_classes, 0);
  return t.e;
}

}  // namespace

ResourceEstimate estimate_resources(const ModelConfig& config, int64_t image_size) {
  CNN_CHECK(image_size >= 1, "estimate_resources: expected an image size >= 1, got ", image_size);
  return std::visit([&](const auto& c) { return estimate(c, double(image_size)); }, config);
}

double training_bytes(const ResourceEstimate& e, int64_t batch, bool amp) {
  const double per_param = amp ? 18.0 : 16.0;  // weight, gradient, exp_avg, exp_avg_sq (+ FP16 copy)
  const double per_activation = amp ? 2.0 : 4.0;
  return e.parameters * per_param + e.activation_floats_per_image * double(batch) * per_activation;
}

std::string format_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, bytes >= 1e6 ? "%.3g %s" : "%.1f %s", bytes, kUnits[u]);
  return buf;
}

}  // namespace cnn
