// Central-difference gradient checker in double precision.
#include "tests/support/gradcheck.h"

#include <cmath>
#include <sstream>

namespace cnn::test {

namespace {

double loss_of(const OpFn& op, const std::vector<Tensor>& inputs, const std::vector<double>& r) {
  const Tensor y = op(nullptr, inputs);
  const std::vector<double> v = y.to(DType::f64).to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * r[i];
  return s;
}

}  // namespace

::testing::AssertionResult gradcheck(const OpFn& op, const std::vector<Tensor>& inputs_in,
                                     const GradCheckOptions& o) {
  std::vector<Tensor> inputs;
  for (const Tensor& t : inputs_in) {
    if (!t.requires_grad()) {
      inputs.push_back(t);
      continue;
    }
    if (t.dtype() != DType::f64 || !t.device().is_cpu()) {
      return ::testing::AssertionFailure() << "gradcheck: inputs requiring grad must be f64 on cpu, got " << t.str();
    }
    Tensor c = t.clone();  // private copy: perturbed in place below
    c.set_requires_grad(true);
    inputs.push_back(c);
  }
  Tape tape;
  const Tensor y = op(&tape, inputs);
  if (!y.requires_grad()) return ::testing::AssertionFailure() << "gradcheck: the op output does not require grad";
  Tensor r = Tensor::empty(y.shape(), DType::f64, Device::cpu(), "R");
  r.normal_(o.seed, 0, 0.0, 1.0);
  tape.backward(y, r.to(y.dtype()));
  const std::vector<double> rv = r.to_vector<double>();

  double max_abs = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor& x = inputs[i];
    if (!x.requires_grad()) continue;
    const Tensor g = x.grad();
    if (!g.defined()) return ::testing::AssertionFailure() << "gradcheck: input " << i << " received no gradient";
    const std::vector<double> analytic = g.to(DType::f64).to_vector<double>();
    double* xp = x.data<double>();
    for (int64_t j = 0; j < x.numel(); ++j) {
      const double saved = xp[j];
      xp[j] = saved + o.step;
      const double lp = loss_of(op, inputs, rv);
      xp[j] = saved - o.step;
      const double lm = loss_of(op, inputs, rv);
      xp[j] = saved;
      const double numeric = (lp - lm) / (2 * o.step);
      const double err = std::fabs(analytic[size_t(j)] - numeric);
      max_abs = std::max(max_abs, err);
      if (!(err <= o.atol + o.rtol * std::fabs(numeric))) {
        std::ostringstream os;
        os.precision(12);
        os << "gradcheck: input " << i << " " << x.str() << " flat index " << j << ": expected (numeric) " << numeric
           << ", got (analytic) " << analytic[size_t(j)] << ", abs err " << err << " > atol " << o.atol << " + rtol "
           << o.rtol << " * |numeric|; step " << o.step << ", R seed " << o.seed;
        return ::testing::AssertionFailure() << os.str();
      }
    }
  }
  return ::testing::AssertionSuccess() << "max abs err " << max_abs;
}

}  // namespace cnn::test
