// The CNN layer Modules: parameter creation and registration, init schemes, forward through layers/functional.h.
#include "layers/layers.h"

#include "layers/functional.h"
#include "layers/init.h"

namespace cnn {

namespace {

Tensor zeros(const Shape& s) { return Tensor::zeros(s, DType::f32); }
Tensor ones(const Shape& s) { return Tensor::full(s, 1.0, DType::f32); }

void check_positive(const char* layer, int64_t v, const char* what) {
  CNN_CHECK(v >= 1, layer, ": expected ", what, " >= 1, got ", v);
}

// Conv / Linear weights under either scheme; fan_in per PyTorch (in_channels / groups * kernel area).
void init_weight_bias(InitScheme scheme, InitRng& rng, Tensor& w, Tensor& b, int64_t fan_in) {
  if (scheme == InitScheme::trunc_normal_002) {
    init::trunc_normal_(w, 0.02, rng);
    if (b.defined()) b.fill_(0.0);
  } else {
    init::kaiming_uniform_(w, fan_in, rng);
    if (b.defined()) init::bias_uniform_(b, fan_in, rng);
  }
}

// 'same' padding of one axis: (k - 1) / 2 before, k / 2 after (equal for odd k).
int same_before(int k) { return (k - 1) / 2; }
int same_after(int k) { return k / 2; }

}  // namespace

// ---- Conv2d ------------------------------------------------------------------------------------------------------

Conv2d::Conv2d(const Conv2dOptions& o) : Module("Conv2d"), options_(o) {
  check_positive("Conv2d", o.in_channels, "in_channels");
  check_positive("Conv2d", o.out_channels, "out_channels");
  check_positive("Conv2d", o.kernel_h, "kernel_h");
  check_positive("Conv2d", o.kernel_w, "kernel_w");
  check_positive("Conv2d", o.stride_h, "stride_h");
  check_positive("Conv2d", o.stride_w, "stride_w");
  CNN_CHECK(o.pad_h >= 0 && o.pad_w >= 0, "Conv2d: expected paddings >= 0, got ", o.pad_h, "x", o.pad_w);
  weight = zeros({o.out_channels, o.kernel_h, o.kernel_w, o.in_channels});
  register_parameter("weight", &weight);
  if (o.bias) {
    bias = zeros({o.out_channels});
    register_parameter("bias", &bias);
  }
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int kernel, int stride, int padding, bool bias)
    : Conv2d(Conv2dOptions{in_channels, out_channels, kernel, kernel, stride, stride, padding, padding, bias}) {}

Tensor Conv2d::forward(const ForwardContext& ctx, const Tensor& x) {
  const ops::Conv2dGeometry g{options_.stride_h, options_.stride_w, options_.pad_h, options_.pad_w};
  return ops::conv2d(ctx.tape, x, weight, bias, g);
}

void Conv2d::init_parameters(InitScheme scheme, InitRng& rng) {
  init_weight_bias(scheme, rng, weight, bias, options_.in_channels * options_.kernel_h * options_.kernel_w);
}

// ---- DepthwiseConv2d -----------------------------------------------------------------------------------------------

DepthwiseConv2d::DepthwiseConv2d(const DepthwiseConv2dOptions& o) : Module("DepthwiseConv2d"), options_(o) {
  check_positive("DepthwiseConv2d", o.channels, "channels");
  check_positive("DepthwiseConv2d", o.kernel_h, "kernel_h");
  check_positive("DepthwiseConv2d", o.kernel_w, "kernel_w");
  check_positive("DepthwiseConv2d", o.stride_h, "stride_h");
  check_positive("DepthwiseConv2d", o.stride_w, "stride_w");
  for (int pad : {o.pad_top, o.pad_bottom, o.pad_left, o.pad_right})
    CNN_CHECK(pad >= -1, "DepthwiseConv2d: expected paddings >= 0 (or -1 for 'same'), got ", pad);
  if (options_.pad_top < 0) options_.pad_top = same_before(o.kernel_h);
  if (options_.pad_bottom < 0) options_.pad_bottom = same_after(o.kernel_h);
  if (options_.pad_left < 0) options_.pad_left = same_before(o.kernel_w);
  if (options_.pad_right < 0) options_.pad_right = same_after(o.kernel_w);
  weight = zeros({o.kernel_h, o.kernel_w, o.channels});
  register_parameter("weight", &weight);
  if (o.bias) {
    bias = zeros({o.channels});
    register_parameter("bias", &bias);
  }
}

DepthwiseConv2d::DepthwiseConv2d(int64_t channels, int kernel, int stride, bool bias)
    : DepthwiseConv2d([&] {
        DepthwiseConv2dOptions o;
        o.channels = channels;
        o.kernel_h = o.kernel_w = kernel;
        o.stride_h = o.stride_w = stride;
        o.bias = bias;
        return o;
      }()) {}

ops::DwGeometry DepthwiseConv2d::geometry() const {
  return {options_.stride_h, options_.stride_w, options_.pad_top, options_.pad_bottom, options_.pad_left,
          options_.pad_right};
}

Tensor DepthwiseConv2d::forward(const ForwardContext& ctx, const Tensor& x) {
  return ops::depthwise_conv2d(ctx.tape, x, weight, bias, geometry(), options_.bfc_accum, filter_grad_);
}

void DepthwiseConv2d::init_parameters(InitScheme scheme, InitRng& rng) {
  init_weight_bias(scheme, rng, weight, bias, int64_t(options_.kernel_h) * options_.kernel_w);  // 1 in-channel/group
}

// ---- Linear ------------------------------------------------------------------------------------------------------

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias)
    : Module("Linear"), in_(in_features), out_(out_features) {
  check_positive("Linear", in_features, "in_features");
  check_positive("Linear", out_features, "out_features");
  weight = zeros({out_features, in_features});
  register_parameter("weight", &weight);
  if (with_bias) {
    bias = zeros({out_features});
    register_parameter("bias", &bias);
  }
}

Tensor Linear::forward(const ForwardContext& ctx, const Tensor& x) {
  return ops::linear_nd(ctx.tape, x, weight, bias);
}

void Linear::init_parameters(InitScheme scheme, InitRng& rng) { init_weight_bias(scheme, rng, weight, bias, in_); }

// ---- normalisation -----------------------------------------------------------------------------------------------

LayerNorm::LayerNorm(int64_t channels, double eps) : Module("LayerNorm"), eps_(eps) {
  check_positive("LayerNorm", channels, "channels");
  CNN_CHECK(eps > 0.0, "LayerNorm: expected eps > 0, got ", eps);
  weight = ones({channels});
  bias = zeros({channels});
  register_parameter("weight", &weight, false);
  register_parameter("bias", &bias, false);
}

Tensor LayerNorm::forward(const ForwardContext& ctx, const Tensor& x) {
  return ops::layer_norm(ctx.tape, x, weight, bias, eps_);
}

BatchNorm2d::BatchNorm2d(int64_t channels, double eps, double momentum)
    : Module("BatchNorm2d"), eps_(eps), momentum_(momentum) {
  check_positive("BatchNorm2d", channels, "channels");
  CNN_CHECK(eps > 0.0 && momentum >= 0.0 && momentum <= 1.0,
            "BatchNorm2d: expected eps > 0 and momentum in [0, 1], got eps=", eps, " momentum=", momentum);
  weight = ones({channels});
  bias = zeros({channels});
  running_mean = zeros({channels});
  running_var = ones({channels});
  num_batches_tracked = Tensor::zeros({}, DType::i64);
  register_parameter("weight", &weight, false);
  register_parameter("bias", &bias, false);
  register_buffer("running_mean", &running_mean);
  register_buffer("running_var", &running_var);
  register_buffer("num_batches_tracked", &num_batches_tracked, true);
}

Tensor BatchNorm2d::forward(const ForwardContext& ctx, const Tensor& x) {
  const bool training = training_in(ctx);
  Tensor y = ops::batch_norm(ctx.tape, x, weight, bias, running_mean, running_var, training, momentum_, eps_);
  if (training) ++*num_batches_tracked.data<int64_t>();  // host-resident: no device round trip
  return y;
}

// ---- activations, scaling, pooling -------------------------------------------------------------------------------

Tensor GELU::forward(const ForwardContext& ctx, const Tensor& x) { return ops::gelu(ctx.tape, x); }
Tensor ReLU::forward(const ForwardContext& ctx, const Tensor& x) { return ops::relu(ctx.tape, x); }

LayerScale::LayerScale(int64_t channels, double init_value) : Module("LayerScale") {
  check_positive("LayerScale", channels, "channels");
  gamma = Tensor::full({channels}, init_value, DType::f32);
  register_parameter("gamma", &gamma, false);
}

Tensor LayerScale::forward(const ForwardContext& ctx, const Tensor& x) { return ops::mul(ctx.tape, x, gamma); }

DropPath::DropPath(double drop_prob, uint32_t layer_id) : Module("DropPath"), p_(drop_prob), layer_id_(layer_id) {
  CNN_CHECK(drop_prob >= 0.0 && drop_prob < 1.0, "DropPath: expected drop probability in [0, 1), got ", drop_prob);
  CNN_CHECK(layer_id < (1u << 12), "DropPath: expected layer id < 4096, got ", layer_id);
}

Tensor DropPath::forward(const ForwardContext& ctx, const Tensor& x) {
  if (!training_in(ctx) || p_ == 0.0) return x;
  return ops::drop_path(ctx.tape, x, p_, ctx.seed, ctx.step, layer_id_);
}

Tensor GlobalAvgPool::forward(const ForwardContext& ctx, const Tensor& x) {
  return ops::global_avg_pool(ctx.tape, x);
}

Tensor Identity::forward(const ForwardContext&, const Tensor& x) { return x; }

}  // namespace cnn
