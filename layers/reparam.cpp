// Re-parameterisation helpers: BatchNorm folding and depthwise kernel merging, in FP64 on the host.
#include "layers/reparam.h"

#include <cmath>
#include <vector>

#include "layers/layers.h"

namespace cnn {

namespace {

std::vector<double> host_f64(const Tensor& t) { return t.to(Device::cpu()).to(DType::f64).to_vector<double>(); }

Tensor back_like(const std::vector<double>& v, const Shape& shape, const Tensor& like) {
  return Tensor::from_vector(v, shape).to(like.dtype()).to(like.device());
}

// w' = w * s[channel(i)], b' = (b - mean) * s + beta with s = gamma / sqrt(var + eps).
std::pair<Tensor, Tensor> fold(const Tensor& w, const Tensor& bias, const BatchNorm2d& bn, int64_t channels,
                               bool channel_last, const char* op) {
  CNN_CHECK(w.defined() && bn.weight.size(0) == channels, op, ": BatchNorm2d has ", bn.weight.size(0),
            " channels, the weight ", w.str(), " has ", channels, " output channels");
  CNN_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == channels), op, ": expected bias (", channels,
            "), got ", bias.str());
  const std::vector<double> gamma = host_f64(bn.weight), beta = host_f64(bn.bias), mean = host_f64(bn.running_mean),
                            var = host_f64(bn.running_var);
  std::vector<double> wv = host_f64(w);
  std::vector<double> b = bias.defined() ? host_f64(bias) : std::vector<double>(size_t(channels), 0.0);
  std::vector<double> s(static_cast<size_t>(channels));
  for (size_t c = 0; c < s.size(); ++c) s[c] = gamma[c] / std::sqrt(var[c] + bn.eps());
  const size_t per = wv.size() / size_t(channels);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] *= s[channel_last ? i % size_t(channels) : i / per];
  for (size_t c = 0; c < s.size(); ++c) b[c] = (b[c] - mean[c]) * s[c] + beta[c];
  return {back_like(wv, w.shape(), w), back_like(b, {channels}, w)};
}

}  // namespace

std::pair<Tensor, Tensor> fold_bn_dense(const Tensor& w, const Tensor& bias, const BatchNorm2d& bn) {
  CNN_CHECK(w.defined() && w.dim() == 4, "fold_bn_dense: expected weight (K, R, S, C), got ",
            w.defined() ? w.str() : "undefined");
  return fold(w, bias, bn, w.size(0), false, "fold_bn_dense");
}

std::pair<Tensor, Tensor> fold_bn_depthwise(const Tensor& w, const Tensor& bias, const BatchNorm2d& bn) {
  CNN_CHECK(w.defined() && w.dim() == 3, "fold_bn_depthwise: expected weight (FH, FW, C), got ",
            w.defined() ? w.str() : "undefined");
  return fold(w, bias, bn, w.size(2), true, "fold_bn_depthwise");
}

Tensor merge_depthwise_kernels(const Tensor& large, const Tensor& small) {
  CNN_CHECK(large.defined() && small.defined() && large.dim() == 3 && small.dim() == 3 &&
                large.size(2) == small.size(2),
            "merge_depthwise_kernels: expected large (FH, FW, C) and small (fh, fw, C), got ",
            large.defined() ? large.str() : "undefined", " and ", small.defined() ? small.str() : "undefined");
  const int64_t fh = large.size(0), fw = large.size(1), sh = small.size(0), sw = small.size(1), c = large.size(2);
  CNN_CHECK(sh <= fh && sw <= fw && (fh - sh) % 2 == 0 && (fw - sw) % 2 == 0,
            "merge_depthwise_kernels: the small kernel ", sh, "x", sw, " must fit centred in ", fh, "x", fw,
            " (same parity, not larger)");
  std::vector<double> out = host_f64(large);
  const std::vector<double> sv = host_f64(small);
  const int64_t top = (fh - sh) / 2, left = (fw - sw) / 2;
  for (int64_t i = 0; i < sh; ++i)
    for (int64_t j = 0; j < sw; ++j)
      for (int64_t ch = 0; ch < c; ++ch)
        out[size_t(((i + top) * fw + j + left) * c + ch)] += sv[size_t((i * sw + j) * c + ch)];
  return back_like(out, large.shape(), large);
}

}  // namespace cnn
