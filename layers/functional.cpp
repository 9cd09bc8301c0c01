// Differentiable ops: forward through layers/backend.h, a tape node whose closure keeps only what backward reads.
#include "layers/functional.h"

#include "layers/backend.h"

namespace cnn::ops {

using kernels::BinaryOp;

namespace {

void check_float_pair(const char* op, const Tensor& a, const Tensor& b) {
  CNN_CHECK(a.defined() && b.defined(), op, ": undefined input");
  CNN_CHECK(dtype_is_floating(a.dtype()), op, ": expected a floating dtype, got ", a.str());
  CNN_CHECK(a.dtype() == b.dtype(), op, ": inputs must share a dtype, got ", a.str(), " and ", b.str());
  CNN_CHECK(a.device() == b.device(), op, ": inputs must be on one device, got ", a.str(), " and ", b.str());
}

// b may equal a's shape, be (C) for a (..., C), or hold one element. Returns whether b is broadcast.
bool check_broadcast(const char* op, const Tensor& a, const Tensor& b) {
  if (b.shape() == a.shape()) return false;
  const bool channel = b.dim() == 1 && a.dim() >= 1 && b.size(0) == a.size(-1);
  const bool scalar = b.numel() == 1 && b.dim() <= 1;
  CNN_CHECK(channel || scalar, op, ": cannot broadcast b ", b.str(), " against a ", a.str(),
            ": expected the same shape, (C) = (", a.dim() >= 1 ? a.size(-1) : 1, "), or one element");
  return true;
}

// Gradient of a broadcast operand: sum the full-shape gradient down to b's shape.
Tensor reduce_to(const Tensor& g, const Shape& b_shape, int64_t b_numel) {
  const Tensor rows = g.contiguous().reshape({g.numel() / b_numel, b_numel});
  return backend::sum_rows(rows, 1.0).reshape(b_shape);
}

}  // namespace

Tensor add(Tape* tape, const Tensor& a, const Tensor& b) {
  check_float_pair("add", a, b);
  const bool bcast = check_broadcast("add", a, b);
  Tensor y = backend::binary(BinaryOp::add, a, b);
  if (Tape::should_record(tape, {&a, &b})) {
    const Shape b_shape = b.shape();
    const int64_t nb = b.numel();
    tape->record("add", {&a, &b}, {&y}, [bcast, b_shape, nb](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {g[0], bcast ? reduce_to(g[0], b_shape, nb) : g[0]};
    });
  }
  return y;
}

Tensor mul(Tape* tape, const Tensor& a, const Tensor& b) {
  check_float_pair("mul", a, b);
  const bool bcast = check_broadcast("mul", a, b);
  Tensor y = backend::binary(BinaryOp::mul, a, b);
  if (Tape::should_record(tape, {&a, &b})) {
    // da needs b, db needs a: keep only what a required gradient reads.
    const Tensor keep_a = b.requires_grad() ? a : Tensor();
    const Tensor keep_b = a.requires_grad() ? b : Tensor();
    const Shape b_shape = b.shape();
    const int64_t nb = b.numel();
    tape->record("mul", {&a, &b}, {&y},
                 [keep_a, keep_b, bcast, b_shape, nb](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                   Tensor da, db;
                   if (keep_b.defined()) da = backend::binary(BinaryOp::mul, g[0], keep_b);
                   if (keep_a.defined()) {
                     const Tensor ga = backend::binary(BinaryOp::mul, g[0], keep_a);
                     db = bcast ? reduce_to(ga, b_shape, nb) : ga;
                   }
                   return {da, db};
                 });
  }
  return y;
}

Tensor scale(Tape* tape, const Tensor& x, double alpha) {
  CNN_CHECK(x.defined(), "scale: undefined input");
  Tensor y = backend::scale(x, alpha);
  if (Tape::should_record(tape, {&x})) {
    tape->record("scale", {&x}, {&y}, [alpha](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {backend::scale(g[0], alpha)};
    });
  }
  return y;
}

namespace {
Tensor reduce_all(Tape* tape, const Tensor& x, bool average, const char* op) {
  CNN_CHECK(x.defined(), op, ": undefined input");
  CNN_CHECK(!average || x.numel() > 0, op, ": mean of an empty tensor ", x.str());
  const double alpha = average ? 1.0 / double(x.numel()) : 1.0;
  Tensor y = backend::sum_all(x, alpha);
  if (Tape::should_record(tape, {&x})) {
    const Shape shape = x.shape();
    tape->record(op, {&x}, {&y}, [shape, alpha](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {backend::broadcast(g[0], shape, alpha)};
    });
  }
  return y;
}

Tensor reduce_rows(Tape* tape, const Tensor& x, bool average, const char* op) {
  CNN_CHECK(x.defined() && x.dim() >= 1, op, ": expected (..., C), got ", x.str());
  const int64_t rows = x.size(-1) > 0 ? x.numel() / x.size(-1) : 0;
  CNN_CHECK(!average || rows > 0, op, ": mean over zero rows of ", x.str());
  const double alpha = average ? 1.0 / double(rows) : 1.0;
  Tensor y = backend::sum_rows(x, alpha);
  if (Tape::should_record(tape, {&x})) {
    const Shape shape = x.shape();
    tape->record(op, {&x}, {&y}, [shape, alpha](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {backend::broadcast(g[0], shape, alpha)};
    });
  }
  return y;
}
}  // namespace

Tensor sum(Tape* tape, const Tensor& x) { return reduce_all(tape, x, false, "sum"); }
Tensor mean(Tape* tape, const Tensor& x) { return reduce_all(tape, x, true, "mean"); }
Tensor sum_except_last(Tape* tape, const Tensor& x) { return reduce_rows(tape, x, false, "sum_except_last"); }
Tensor mean_except_last(Tape* tape, const Tensor& x) { return reduce_rows(tape, x, true, "mean_except_last"); }

Tensor matmul(Tape* tape, const Tensor& a, const Tensor& b) {
  check_float_pair("matmul", a, b);
  CNN_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "matmul: expected a (M, K) and b (K, N), got ",
            a.str(), " and ", b.str());
  Tensor y = backend::gemm(a, b, false, false);
  if (Tape::should_record(tape, {&a, &b})) {
    const Tensor keep_a = b.requires_grad() ? a : Tensor();
    const Tensor keep_b = a.requires_grad() ? b : Tensor();
    tape->record("matmul", {&a, &b}, {&y}, [keep_a, keep_b](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      Tensor da, db;
      if (keep_b.defined()) da = backend::gemm(g[0], keep_b, false, true);  // dy b^T
      if (keep_a.defined()) db = backend::gemm(keep_a, g[0], true, false);  // a^T dy
      return {da, db};
    });
  }
  return y;
}

Tensor linear(Tape* tape, const Tensor& x, const Tensor& w, const Tensor& bias) {
  if (x.defined() && x.dim() > 2 && w.defined() && w.dim() == 2 && x.size(-1) == w.size(1)) {
    // (..., K): the GEMM over the flattened rows, e.g. a 1x1 conv on NHWC activations.
    Shape out = x.shape();
    out.back() = w.size(0);
    return reshape(tape, linear(tape, reshape(tape, x, {-1, x.size(-1)}), w, bias), out);
  }
  check_float_pair("linear", x, w);
  CNN_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1), "linear: expected x (M, K) and w (N, K), got ",
            x.str(), " and ", w.str());
  if (bias.defined()) {
    check_float_pair("linear", x, bias);
    CNN_CHECK(bias.dim() == 1 && bias.size(0) == w.size(0), "linear: expected bias (", w.size(0), "), got ",
              bias.str());
  }
  Tensor y = backend::gemm(x, w, false, true);
  if (bias.defined()) backend::binary_into(BinaryOp::add, y, bias, y);
  if (Tape::should_record(tape, {&x, &w, &bias})) {
    const Tensor keep_x = w.requires_grad() ? x : Tensor();
    const Tensor keep_w = x.requires_grad() ? w : Tensor();
    const bool bias_grad = bias.defined() && bias.requires_grad();
    tape->record("linear", {&x, &w, &bias}, {&y},
                 [keep_x, keep_w, bias_grad](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                   Tensor dx, dw, db;
                   if (keep_w.defined()) dx = backend::gemm(g[0], keep_w, false, false);  // dy W
                   if (keep_x.defined()) dw = backend::gemm(g[0], keep_x, true, false);   // dy^T x
                   if (bias_grad) db = backend::sum_rows(g[0], 1.0);
                   return {dx, dw, db};
                 });
  }
  return y;
}

Tensor relu(Tape* tape, const Tensor& x) {
  CNN_CHECK(x.defined(), "relu: undefined input");
  Tensor y = backend::relu_forward(x);
  if (Tape::should_record(tape, {&x})) {
    const Tensor keep_y = y;  // the mask y > 0 is all backward reads
    tape->record("relu", {&x}, {&y}, [keep_y](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {backend::relu_backward(keep_y, g[0])};
    });
  }
  return y;
}

Tensor softmax_cross_entropy(Tape* tape, const Tensor& logits, const Tensor& labels, double label_smoothing) {
  auto [loss, lse] = backend::softmax_xent_forward(logits, labels, label_smoothing);
  if (Tape::should_record(tape, {&logits})) {
    tape->record("softmax_cross_entropy", {&logits, &labels}, {&loss},
                 [logits, labels, lse, label_smoothing](const std::vector<Tensor>& g) -> std::vector<Tensor> {
                   return {backend::softmax_xent_backward(logits, labels, lse, g[0], label_smoothing), Tensor()};
                 });
  }
  return loss;
}

Tensor reshape(Tape* tape, const Tensor& x, const Shape& shape) {
  CNN_CHECK(x.defined(), "reshape: undefined input");
  Tensor y = x.contiguous().reshape(shape);
  if (Tape::should_record(tape, {&x})) {
    const Shape x_shape = x.shape();
    tape->record("reshape", {&x}, {&y}, [x_shape](const std::vector<Tensor>& g) -> std::vector<Tensor> {
      return {g[0].contiguous().reshape(x_shape)};
    });
  }
  return y;
}

}  // namespace cnn::ops
