// Runs an op on cpu and cuda:0 with identical inputs and seeds, and compares forward outputs and input gradients.
#include "tests/support/gpu_compare.h"

#include "tests/support/numeric.h"

namespace cnn::test {

namespace {

struct Run {
  Tensor y;
  std::vector<Tensor> grads;
};

Run run_on(const OpFn& op, const std::vector<Tensor>& inputs, const Tensor& r, bool grads) {
  Tape tape;
  Run out;
  out.y = op(grads ? &tape : nullptr, inputs);
  if (grads && out.y.requires_grad()) {
    tape.backward(out.y, r.to(out.y.device()).to(out.y.dtype()));
    for (const Tensor& t : inputs) out.grads.push_back(t.defined() && t.requires_grad() ? t.grad() : Tensor());
  }
  return out;
}

}  // namespace

::testing::AssertionResult compare_gpu_cpu(const OpFn& op, const std::vector<Tensor>& cpu_inputs,
                                           const GpuCompareOptions& o) {
  if (!has_cuda_device()) return ::testing::AssertionFailure() << "compare_gpu_cpu: no CUDA device";
  const Device gpu = Device::cuda(0);
  std::vector<Tensor> cpu, dev;
  for (const Tensor& t : cpu_inputs) {
    if (!t.defined()) {  // an absent optional input (e.g. no bias) stays absent on both devices
      cpu.emplace_back();
      dev.emplace_back();
      continue;
    }
    Tensor c = t.clone(), d;
    if (dtype_is_floating(t.dtype())) {
      c = t.to(o.gpu_dtype).to(DType::f32).clone();  // both sides start from the same (possibly f16-rounded) values
      d = c.to(o.gpu_dtype).to(gpu);
      if (t.requires_grad()) {
        c.set_requires_grad(true);
        d.set_requires_grad(true);
      }
    } else {
      d = c.to(gpu);
    }
    cpu.push_back(c);
    dev.push_back(d);
  }
  const Run probe = run_on(op, cpu, Tensor(), false);
  Tensor r = Tensor::empty(probe.y.shape(), DType::f32, Device::cpu(), "R");
  r.normal_(o.seed, 0, 0.0, 1.0);
  r = r.to(o.gpu_dtype).to(DType::f32);
  const Run ref = run_on(op, cpu, r, o.check_grads);
  const Run got = run_on(op, dev, r, o.check_grads);
  if (!got.y.device().is_cuda()) return ::testing::AssertionFailure() << "op output is not on cuda: " << got.y.str();
  ::testing::AssertionResult fwd = all_close(ref.y, got.y, o.atol, o.rtol, "forward output");
  if (!fwd) return fwd << " (gpu dtype " << dtype_name(o.gpu_dtype) << ", R seed " << o.seed << ")";
  for (size_t i = 0; i < ref.grads.size(); ++i) {
    if (!ref.grads[i].defined()) continue;
    if (!got.grads[i].defined()) return ::testing::AssertionFailure() << "no gpu gradient for input " << i;
    ::testing::AssertionResult g =
        all_close(ref.grads[i], got.grads[i], o.atol, o.rtol, "gradient of input " + std::to_string(i));
    if (!g) return g << " (gpu dtype " << dtype_name(o.gpu_dtype) << ", R seed " << o.seed << ")";
  }
  return ::testing::AssertionSuccess();
}

GpuCompareOptions gpu_compare_options(DType gpu_dtype, double f32_tol, double f16_atol, double f16_rtol) {
  GpuCompareOptions o;
  o.gpu_dtype = gpu_dtype;
  o.atol = gpu_dtype == DType::f32 ? f32_tol : f16_atol;
  o.rtol = gpu_dtype == DType::f32 ? f32_tol : f16_rtol;
  return o;
}

Tensor random_input(const Shape& shape, uint64_t seed, bool requires_grad, double lo, double hi) {
  Tensor x = Tensor::empty(shape, DType::f32);
  x.uniform_(seed, 0, lo, hi);
  if (requires_grad) x.set_requires_grad(true);
  return x;
}

}  // namespace cnn::test
