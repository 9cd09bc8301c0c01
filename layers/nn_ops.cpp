// Differentiable CNN ops: validate (one-line errors naming the op, expected vs got), run the forward through
// layers/nn_backend.h and record a tape node whose closure keeps only what its backward reads.
#include "layers/nn_ops.h"

#include <limits>

#include "layers/backend.h"
#include "layers/functional.h"
#include "layers/nn_backend.h"

namespace cnn::ops {

namespace {

void check_same(const char* op, const Tensor& x, const Tensor& t, const char* name) {
  CNN_CHECK(t.defined(), op, ": ", name, " is undefined");
  CNN_CHECK(t.dtype() == x.dtype(), op, ": ", name, " ", t.str(), " must have x's dtype, x is ", x.str());
  CNN_CHECK(t.device() == x.device(), op, ": ", name, " ", t.str(), " must be on x's device, x is ", x.str());
}

void check_vector(const char* op, const Tensor& x, const Tensor& t, const char* name, int64_t c) {
  check_same(op, x, t, name);
  CNN_CHECK(t.dim() == 1 && t.size(0) == c, op, ": expected ", name, " (", c, "), got ", t.str());
}

void check_input(const char* op, const Tensor& x, int dims) {
  CNN_CHECK(x.defined(), op, ": undefined input");
  CNN_CHECK(dtype_is_floating(x.dtype()), op, ": expected a floating dtype, got ", x.str());
  CNN_CHECK(dims == 0 || x.dim() == dims, op, ": expected x with ", dims, " axes (N, H, W, C), got ", x.str());
}

DType stat_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

int as_int(const char* op, int64_t v, const char* what) {
  CNN_CHECK(v <= std::numeric_limits<int>::max(), op, ": ", what, " ", v, " does not fit in int32");
  return int(v);
}

}  // namespace

Tensor conv2d(Tape* tape, const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dGeometry& g) {
  check_input("conv2d", x, 4);
  check_same("conv2d", x, w, "weight");
  CNN_CHECK(w.dim() == 4 && w.size(3) == x.size(3), "conv2d: expected weight (K, R, S, ", x.size(3),
            ") for x ", x.str(), ", got ", w.str());
  if (bias.defined()) check_vector("conv2d", x, bias, "bias", w.size(0));
  kernels::Conv2dParams p;
  p.n = x.size(0), p.ih = x.size(1), p.iw = x.size(2), p.c = x.size(3);
  p.k = w.size(0), p.r = w.size(1), p.s = w.size(2);
  p.stride_h = g.stride_h, p.stride_w = g.stride_w, p.pad_h = g.pad_h, p.pad_w = g.pad_w;
  p.validate("conv2d");
  Tensor y = backend::conv2d_forward(x, w, p);
  if (bias.defined()) backend::binary_into(kernels::BinaryOp::add, y, bias, y);
  if (Tape::should_record(tape, {&x, &w, &bias})) {
    const Tensor keep_x = w.requires_grad() ? x : Tensor();
    const Tensor keep_w = x.requires_grad() ? w : Tensor();
    const bool bias_grad = bias.defined() && bias.requires_grad();
    tape->record("conv2d", {&x, &w, &bias}, {&y},
                 [keep_x, keep_w, bias_grad, p](const std::vector<Tensor>& gr) -> std::vector<Tensor> {
                   Tensor dx, dw, db;
                   if (keep_w.defined()) dx = backend::conv2d_backward_data(gr[0], keep_w, p);
                   if (keep_x.defined()) dw = backend::conv2d_backward_filter(keep_x, gr[0], p);
                   if (bias_grad) db = backend::sum_rows(gr[0], 1.0);
                   return {dx, dw, db};
                 });
  }
  return y;
}

Tensor depthwise_conv2d(Tape* tape, const Tensor& x, const Tensor& w, const Tensor& bias, const DwGeometry& g,
                        dwconv::BfcAccum bfc_accum, const DwFilterGrad& filter_grad) {
  check_input("depthwise_conv2d", x, 4);
  check_same("depthwise_conv2d", x, w, "weight");
  CNN_CHECK(w.dim() == 3 && w.size(2) == x.size(3), "depthwise_conv2d: expected weight (FH, FW, ", x.size(3),
            ") for x ", x.str(), ", got ", w.str());
  if (bias.defined()) check_vector("depthwise_conv2d", x, bias, "bias", x.size(3));
  dwconv::DwconvParams p;
  p.n = as_int("depthwise_conv2d", x.size(0), "N");
  p.ih = as_int("depthwise_conv2d", x.size(1), "H");
  p.iw = as_int("depthwise_conv2d", x.size(2), "W");
  p.c = as_int("depthwise_conv2d", x.size(3), "C");
  p.fh = as_int("depthwise_conv2d", w.size(0), "FH");
  p.fw = as_int("depthwise_conv2d", w.size(1), "FW");
  p.stride_h = g.stride_h, p.stride_w = g.stride_w;
  p.pad_top = g.pad_top, p.pad_bottom = g.pad_bottom, p.pad_left = g.pad_left, p.pad_right = g.pad_right;
  p.validate("depthwise_conv2d");
  Tensor y = backend::dwconv_forward(x, w, bias, p);
  if (Tape::should_record(tape, {&x, &w, &bias})) {
    const Tensor keep_x = w.requires_grad() ? x : Tensor();
    const Tensor keep_w = x.requires_grad() ? w : Tensor();
    const bool bias_grad = bias.defined() && bias.requires_grad();
    tape->record("depthwise_conv2d", {&x, &w, &bias}, {&y},
                 [keep_x, keep_w, bias_grad, p, bfc_accum,
                  filter_grad](const std::vector<Tensor>& gr) -> std::vector<Tensor> {
                   Tensor dx, dw, db;
                   if (keep_w.defined()) dx = backend::dwconv_backward_data(gr[0], keep_w, p);
                   if (keep_x.defined())
                     dw = filter_grad ? filter_grad(keep_x, gr[0], p, bfc_accum)
                                      : backend::dwconv_backward_filter(keep_x, gr[0], p, bfc_accum);
                   if (bias_grad) db = backend::sum_rows(gr[0], 1.0);
                   return {dx, dw, db};
                 });
  }
  return y;
}

Tensor linear_nd(Tape* tape, const Tensor& x, const Tensor& w, const Tensor& bias) {
  CNN_CHECK(x.defined() && x.dim() >= 2, "linear: expected x (..., K) with at least 2 axes, got ",
            x.defined() ? x.str() : "undefined");
  CNN_CHECK(w.defined() && w.dim() == 2 && w.size(1) == x.size(-1), "linear: expected weight (N, ", x.size(-1),
            ") for x ", x.str(), ", got ", w.defined() ? w.str() : "undefined");
  return linear(tape, x, w, bias);
}

Tensor layer_norm(Tape* tape, const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  check_input("layer_norm", x, 0);
  CNN_CHECK(x.dim() >= 1 && x.numel() >= 1, "layer_norm: expected non-empty x (..., C), got ", x.str());
  check_vector("layer_norm", x, gamma, "weight", x.size(-1));
  check_vector("layer_norm", x, beta, "bias", x.size(-1));
  CNN_CHECK(eps > 0.0, "layer_norm: expected eps > 0, got ", eps);
  backend::NormStats stats;
  Tensor y = backend::layernorm_forward(x, gamma, beta, eps, stats);
  if (Tape::should_record(tape, {&x, &gamma, &beta})) {
    const bool need_dx = x.requires_grad(), need_params = gamma.requires_grad() || beta.requires_grad();
    tape->record("layer_norm", {&x, &gamma, &beta}, {&y},
                 [x, gamma, stats, need_dx, need_params](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                   backend::NormGrads d = backend::layernorm_backward(g[0], x, gamma, stats, need_dx, need_params);
                   return {d.dx, d.dgamma, d.dbeta};
                 });
  }
  return y;
}

Tensor batch_norm(Tape* tape, const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                  Tensor& running_var, bool training, double momentum, double eps) {
  check_input("batch_norm", x, 0);
  CNN_CHECK(x.dim() >= 2 && x.numel() >= 1, "batch_norm: expected non-empty x (N, H, W, C) or (N, C), got ",
            x.str());
  const int64_t c = x.size(-1), rows = x.numel() / c;
  check_vector("batch_norm", x, gamma, "weight", c);
  check_vector("batch_norm", x, beta, "bias", c);
  for (const Tensor* r : {&running_mean, &running_var}) {
    const char* name = r == &running_mean ? "running_mean" : "running_var";
    CNN_CHECK(r->defined() && r->dim() == 1 && r->size(0) == c && r->dtype() == stat_dtype(x.dtype()) &&
                  r->device() == x.device(),
              "batch_norm: expected ", name, " (", c, ") ", dtype_name(stat_dtype(x.dtype())), " on ",
              x.device().str(), ", got ", r->defined() ? r->str() : "undefined");
  }
  CNN_CHECK(eps > 0.0 && momentum >= 0.0 && momentum <= 1.0,
            "batch_norm: expected eps > 0 and momentum in [0, 1], got eps=", eps, " momentum=", momentum);
  CNN_CHECK(!training || rows > 1, "batch_norm: training needs more than one value per channel, got ", x.str());
  const backend::NormStats stats =
      training ? backend::batchnorm_batch_stats(x, running_mean, running_var, momentum, eps, true)
               : backend::batchnorm_running_stats(running_mean, running_var, eps);
  Tensor y = backend::batchnorm_apply(x, gamma, beta, stats);
  if (Tape::should_record(tape, {&x, &gamma, &beta})) {
    const bool need_dx = x.requires_grad();
    tape->record("batch_norm", {&x, &gamma, &beta}, {&y},
                 [x, gamma, stats, training, need_dx](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                   backend::NormGrads d = backend::batchnorm_backward(g[0], x, gamma, stats, training, need_dx);
                   return {d.dx, d.dgamma, d.dbeta};
                 });
  }
  return y;
}

Tensor gelu(Tape* tape, const Tensor& x) {
  check_input("gelu", x, 0);
  Tensor y = backend::gelu_forward(x);
  if (Tape::should_record(tape, {&x})) {
    tape->record("gelu", {&x}, {&y}, [x](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {backend::gelu_backward(x, g[0])};
    });
  }
  return y;
}

Tensor sample_scale(Tape* tape, const Tensor& x, const Tensor& scale) {
  check_input("sample_scale", x, 0);
  CNN_CHECK(scale.defined() && scale.device() == x.device(), "sample_scale: expected scale on ", x.device().str());
  Tensor y = backend::sample_scale(x, scale);
  if (Tape::should_record(tape, {&x})) {
    tape->record("sample_scale", {&x}, {&y}, [scale](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {backend::sample_scale(g[0], scale)};
    });
  }
  return y;
}

Tensor drop_path_scales(int64_t n, double drop_prob, uint64_t seed, uint64_t step, uint32_t layer_id, DType dtype,
                        Device device) {
  CNN_CHECK(drop_prob >= 0.0 && drop_prob < 1.0, "drop_path: expected drop probability in [0, 1), got ", drop_prob);
  CNN_CHECK(n >= 1 && n < (int64_t(1) << 20), "drop_path: expected 1 <= N < 2^20 samples, got ", n);
  CNN_CHECK(layer_id < (1u << 12), "drop_path: expected layer id < 4096, got ", layer_id);
  CNN_CHECK(step < (uint64_t(1) << 32), "drop_path: expected step < 2^32, got ", step);
  Tensor u = Tensor::empty({n}, DType::f32, device, "drop_path uniforms");
  u.uniform_(seed, (step << 32) | (uint64_t(layer_id) << 20), 0.0, 1.0);
  return backend::drop_scales(u, 1.0 - drop_prob, stat_dtype(dtype));
}

Tensor drop_path(Tape* tape, const Tensor& x, double drop_prob, uint64_t seed, uint64_t step, uint32_t layer_id) {
  check_input("drop_path", x, 0);
  CNN_CHECK(x.dim() >= 1, "drop_path: expected x (N, ...), got ", x.str());
  if (drop_prob == 0.0) return x;
  return sample_scale(tape, x, drop_path_scales(x.size(0), drop_prob, seed, step, layer_id, x.dtype(), x.device()));
}

Tensor global_avg_pool(Tape* tape, const Tensor& x) {
  check_input("global_avg_pool", x, 4);
  CNN_CHECK(x.numel() >= 1, "global_avg_pool: expected a non-empty x, got ", x.str());
  Tensor y = backend::gap_forward(x);
  if (Tape::should_record(tape, {&x})) {
    const Shape shape = x.shape();
    tape->record("global_avg_pool", {&x}, {&y}, [shape](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {backend::gap_backward(g[0], shape)};
    });
  }
  return y;
}

Tensor cast(Tape* tape, const Tensor& x, DType dtype) {
  check_input("cast", x, 0);
  CNN_CHECK(dtype_is_floating(dtype), "cast: expected a floating target dtype, got ", dtype_name(dtype));
  if (x.dtype() == dtype) return x;
  Tensor y = x.to(dtype);
  if (Tape::should_record(tape, {&x})) {
    const DType from = x.dtype();
    tape->record("cast", {&x}, {&y}, [from](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {g[0].to(from)};
    });
  }
  return y;
}

}  // namespace cnn::ops
