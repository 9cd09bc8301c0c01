// Tensor metadata, views, copies, conversion, fills and random init (CPU paths here, CUDA via tensor_device.h).
#include "core/tensor.h"

#include <omp.h>

#include <algorithm>
#include <limits>

#include "core/dispatch.h"
#include "core/philox.h"
#include "core/tensor_device.h"

namespace cnn {

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t e : s) {
    CNN_CHECK(e >= 0, "shape ", shape_str(s), ": negative extent");
    CNN_CHECK(e == 0 || n <= std::numeric_limits<int64_t>::max() / e, "shape ", shape_str(s),
              ": element count overflows int64");
    n *= e;
  }
  return n;
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (int i = int(s.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= std::max<int64_t>(s[i], 1);
  }
  return st;
}

// ---- creation ---------------------------------------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, const std::string& label) {
  CNN_CHECK(int(shape.size()) <= kMaxDims, "Tensor::empty: at most ", kMaxDims, " axes, got shape ", shape_str(shape));
  const int64_t n = shape_numel(shape);
  CNN_CHECK(n <= std::numeric_limits<int64_t>::max() / dtype_size(dtype), "Tensor::empty: ", shape_str(shape), " of ",
            dtype_name(dtype), " overflows the byte count");
  Tensor t;
  t.storage_ = Storage::allocate(n * dtype_size(dtype), device, label);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.numel_ = n;
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::empty_pinned(const Shape& shape, DType dtype, const std::string& label) {
  Tensor t;
  const int64_t n = shape_numel(shape);
  CNN_CHECK(n <= std::numeric_limits<int64_t>::max() / dtype_size(dtype), "Tensor::empty_pinned: ", shape_str(shape),
            " overflows the byte count");
  t.storage_ = Storage::allocate(n * dtype_size(dtype), Device::cpu(), label, true);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.numel_ = n;
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device, const std::string& label) {
  return full(shape, 0.0, dtype, device, label);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device, const std::string& label) {
  Tensor t = empty(shape, dtype, device, label);
  t.fill_(value);
  return t;
}

Tensor Tensor::from_host(const void* src, const Shape& shape, DType dtype, Device device, const std::string& label) {
  Tensor host = empty(shape, dtype, Device::cpu(), label);
  if (host.nbytes() > 0) std::memcpy(host.data_ptr(), src, size_t(host.nbytes()));
  return host.to(device);
}

// ---- metadata ---------------------------------------------------------------------------------------------------

int64_t Tensor::size(int axis) const {
  const int d = dim();
  CNN_CHECK(axis >= -d && axis < d, "Tensor::size: axis ", axis, " out of range for ", str());
  return shape_[axis < 0 ? axis + d : axis];
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

const std::string& Tensor::label() const {
  static const std::string kEmpty;
  return storage_ ? storage_->label() : kEmpty;
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int i = dim() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

std::string Tensor::str() const {
  if (!defined()) return "<undefined tensor>";
  std::string s = str_cat(dtype_name(dtype_), " ", shape_str(shape_), " ", device().str());
  if (!label().empty()) s += " '" + label() + "'";
  return s;
}

void* Tensor::data_ptr() const {
  CNN_CHECK(defined(), "Tensor::data_ptr: undefined tensor");
  if (storage_->data() == nullptr) return nullptr;
  return static_cast<char*>(storage_->data()) + offset_ * dtype_size(dtype_);
}

void Tensor::copy_to_host(void* dst) const {
  CNN_CHECK(defined(), "Tensor::copy_to_host: undefined tensor");
  Tensor c = to(Device::cpu()).contiguous();
  if (c.nbytes() > 0) std::memcpy(dst, c.data_ptr(), size_t(c.nbytes()));
}

double Tensor::item() const {
  CNN_CHECK(numel_ == 1, "Tensor::item: expected one element, got ", str());
  Tensor c = to(Device::cpu()).to(DType::f64).contiguous();
  return *static_cast<const double*>(c.data_ptr());
}

// ---- views ------------------------------------------------------------------------------------------------------

Tensor Tensor::view(Shape shape, Shape strides, int64_t offset) const {
  Tensor t;
  t.storage_ = storage_;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.offset_ = offset;
  t.dtype_ = dtype_;
  return t;
}

Tensor Tensor::slice(int axis, int64_t start, int64_t end) const {
  CNN_CHECK(defined(), "Tensor::slice: undefined tensor");
  const int d = dim();
  CNN_CHECK(axis >= -d && axis < d, "Tensor::slice: axis ", axis, " out of range for ", str());
  if (axis < 0) axis += d;
  CNN_CHECK(0 <= start && start <= end && end <= shape_[axis], "Tensor::slice: range [", start, ", ", end,
            ") out of bounds for axis ", axis, " of extent ", shape_[axis], " in ", str());
  Shape shape = shape_;
  shape[axis] = end - start;
  return view(shape, strides_, offset_ + start * strides_[axis]);
}

Tensor Tensor::reshape(const Shape& new_shape) const {
  CNN_CHECK(defined(), "Tensor::reshape: undefined tensor");
  CNN_CHECK(is_contiguous(), "Tensor::reshape: needs a contiguous tensor (call contiguous() first), got ", str(),
            " with strides ", shape_str(strides_));
  Shape shape = new_shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      CNN_CHECK(infer < 0, "Tensor::reshape: at most one -1 extent, got ", shape_str(new_shape));
      infer = int(i);
    } else {
      CNN_CHECK(shape[i] >= 0, "Tensor::reshape: invalid extent in ", shape_str(new_shape));
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    CNN_CHECK(known > 0 && numel_ % known == 0, "Tensor::reshape: cannot infer -1 in ", shape_str(new_shape),
              " for ", str());
    shape[infer] = numel_ / known;
  }
  CNN_CHECK(shape_numel(shape) == numel_, "Tensor::reshape: ", shape_str(new_shape), " has ", shape_numel(shape),
            " elements, ", str(), " has ", numel_);
  CNN_CHECK(int(shape.size()) <= kMaxDims, "Tensor::reshape: at most ", kMaxDims, " axes");
  return view(shape, contiguous_strides(shape), offset_);
}

Tensor Tensor::permute(const std::vector<int>& order) const {
  CNN_CHECK(defined(), "Tensor::permute: undefined tensor");
  const int d = dim();
  CNN_CHECK(int(order.size()) == d, "Tensor::permute: order has ", order.size(), " axes, tensor ", str(), " has ", d);
  std::vector<bool> seen(static_cast<size_t>(d), false);
  Shape shape(static_cast<size_t>(d)), strides(static_cast<size_t>(d));
  for (int i = 0; i < d; ++i) {
    const int a = order[i];
    CNN_CHECK(a >= 0 && a < d && !seen[a], "Tensor::permute: order must be a permutation of 0..", d - 1);
    seen[a] = true;
    shape[i] = shape_[a];
    strides[i] = strides_[a];
  }
  return view(shape, strides, offset_);
}

// ---- copies -----------------------------------------------------------------------------------------------------

namespace {

detail::StridedCopy make_strided_copy(const Tensor& src, const Tensor& dst) {
  detail::StridedCopy p;
  p.ndim = src.dim();
  p.numel = src.numel();
  p.elem_size = int(dtype_size(src.dtype()));
  for (int i = 0; i < p.ndim; ++i) {
    p.shape[i] = src.shape()[i];
    p.src_stride[i] = src.strides()[i];
    p.dst_stride[i] = dst.strides()[i];
  }
  return p;
}

// Memory-bound loops go parallel only when large: an OpenMP team that wakes for small work then spins while
// OpenBLAS threads run, which costs far more than it saves on a few cores (docs/core.md).
constexpr int64_t kParallelMin = int64_t(1) << 18;

void cpu_strided_copy(const char* src, char* dst, const detail::StridedCopy& p) {
  const int64_t es = p.elem_size;
#pragma omp parallel for schedule(static) if (p.numel > 32768)
  for (int64_t i = 0; i < p.numel; ++i) {
    int64_t rem = i, so = 0, dof = 0;
    for (int a = p.ndim - 1; a >= 0; --a) {
      const int64_t idx = rem % p.shape[a];
      rem /= p.shape[a];
      so += idx * p.src_stride[a];
      dof += idx * p.dst_stride[a];
    }
    std::memcpy(dst + dof * es, src + so * es, size_t(es));
  }
}

// Same device, same dtype, same shape.
void copy_same(const Tensor& src, Tensor& dst) {
  if (src.numel() == 0) return;
  if (src.is_contiguous() && dst.is_contiguous()) {  // one block: memmove / device memcpy at full bandwidth
    if (src.device().is_cpu())
      std::memmove(dst.data_ptr(), src.data_ptr(), size_t(src.nbytes()));
    else
      detail::cuda_memcpy(src.data_ptr(), src.device(), dst.data_ptr(), dst.device(), src.nbytes());
    return;
  }
  const detail::StridedCopy p = make_strided_copy(src, dst);
  if (src.device().is_cpu()) {
    cpu_strided_copy(static_cast<const char*>(src.data_ptr()), static_cast<char*>(dst.data_ptr()), p);
  } else {
    detail::cuda_strided_copy(src.device().index, src.data_ptr(), dst.data_ptr(), p);
  }
}

// Contiguous src -> new contiguous tensor of dtype t on the same device.
Tensor convert(const Tensor& src, DType t) {
  Tensor out = Tensor::empty(src.shape(), t, src.device(), src.label());
  const int64_t n = src.numel();
  if (n == 0) return out;
  if (src.device().is_cuda()) {
    detail::cuda_convert(src.device().index, src.data_ptr(), src.dtype(), out.data_ptr(), t, n);
    return out;
  }
  dispatch_dtype(src.dtype(), [&](auto stag) {
    using S = typename decltype(stag)::type;
    dispatch_dtype(t, [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      const S* s = static_cast<const S*>(src.data_ptr());
      D* d = static_cast<D*>(out.data_ptr());
#pragma omp parallel for schedule(static) if (n > kParallelMin)
      for (int64_t i = 0; i < n; ++i) d[i] = cast_value<D>(s[i]);
    });
  });
  return out;
}

}  // namespace

Tensor Tensor::contiguous() const {
  CNN_CHECK(defined(), "Tensor::contiguous: undefined tensor");
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  CNN_CHECK(defined(), "Tensor::clone: undefined tensor");
  Tensor out = empty(shape_, dtype_, device(), label());
  copy_same(*this, out);
  return out;
}

Tensor Tensor::to(Device d) const {
  CNN_CHECK(defined(), "Tensor::to: undefined tensor");
  if (d == device()) return *this;
  Tensor out = empty(shape_, dtype_, d, label());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType t) const {
  CNN_CHECK(defined(), "Tensor::to: undefined tensor");
  if (t == dtype_) return *this;
  return convert(contiguous(), t);
}

Tensor& Tensor::copy_(const Tensor& src) {
  CNN_CHECK(defined() && src.defined(), "Tensor::copy_: undefined tensor");
  CNN_CHECK(src.shape() == shape_, "Tensor::copy_: shape mismatch, destination ", str(), ", source ", src.str());
  Tensor s = src;
  if (s.device() != device()) {
    Tensor c = s.contiguous();
    Tensor moved = empty(shape_, c.dtype(), device(), label());
    if (c.nbytes() > 0) detail::cuda_memcpy(c.data_ptr(), c.device(), moved.data_ptr(), device(), c.nbytes());
    s = moved;
  }
  if (s.dtype() != dtype_) s = convert(s.contiguous(), dtype_);
  copy_same(s, *this);
  return *this;
}

Tensor& Tensor::fill_(double value) {
  CNN_CHECK(defined(), "Tensor::fill_: undefined tensor");
  if (!is_contiguous()) {
    Tensor tmp = full(shape_, value, dtype_, device(), label());
    return copy_(tmp);
  }
  if (numel_ == 0) return *this;
  uint64_t bits = 0;
  dispatch_dtype(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = cast_value<T>(value);
    std::memcpy(&bits, &v, sizeof(T));
  });
  const int es = int(dtype_size(dtype_));
  if (device().is_cuda()) {
    detail::cuda_fill(device().index, data_ptr(), bits, es, numel_);
    return *this;
  }
  char* p = static_cast<char*>(data_ptr());
  const int64_t n = numel_;
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) std::memcpy(p + i * es, &bits, size_t(es));
  return *this;
}

Tensor& Tensor::add_(const Tensor& x, double alpha) {
  CNN_CHECK(defined() && x.defined(), "Tensor::add_: undefined tensor");
  CNN_CHECK(x.shape() == shape_, "Tensor::add_: shape mismatch, this ", str(), ", x ", x.str());
  CNN_CHECK(dtype_is_floating(dtype_), "Tensor::add_: expected a floating destination, got ", str());
  CNN_CHECK(x.device() == device(), "Tensor::add_: device mismatch, this ", str(), ", x ", x.str());
  CNN_CHECK(is_contiguous(), "Tensor::add_: destination must be contiguous, got ", str());
  if (numel_ == 0) return *this;
  // A CUDA f16 / bf16 gradient adds into an FP32 accumulator as it is loaded: no converted copy.
  const bool widen_on_load = device().is_cuda() && dtype_ == DType::f32 &&
                             (x.dtype() == DType::f16 || x.dtype() == DType::bf16) && x.is_contiguous();
  const Tensor xs = widen_on_load ? x : x.to(dtype_).contiguous();
  if (device().is_cuda()) {
    detail::cuda_axpy(device().index, xs.data_ptr(), xs.dtype(), data_ptr(), dtype_, numel_, alpha);
    return *this;
  }
  dispatch_dtype(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half> ||
                  std::is_same_v<T, BFloat16>) {
      const T* xp = static_cast<const T*>(xs.data_ptr());
      T* yp = static_cast<T*>(data_ptr());
      const int64_t n = numel_;
#pragma omp parallel for schedule(static) if (n > kParallelMin)
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<T, double>) {
          yp[i] += alpha * xp[i];
        } else {
          yp[i] = T(float(yp[i]) + float(alpha) * float(xp[i]));
        }
      }
    }
  });
  return *this;
}

// ---- random init ------------------------------------------------------------------------------------------------

Tensor& Tensor::random_(int kind, uint64_t seed, uint64_t offset, const float* args) {
  CNN_CHECK(defined(), "Tensor random init: undefined tensor");
  CNN_CHECK(dtype_is_floating(dtype_), "Tensor random init: expected a floating dtype, got ", str());
  if (!is_contiguous()) {
    Tensor tmp = empty(shape_, dtype_, device(), label());
    tmp.random_(kind, seed, offset, args);
    return copy_(tmp);
  }
  if (numel_ == 0) return *this;
  detail::RandomParams p;
  p.kind = detail::RandomKind(kind);
  p.seed = seed;
  p.offset = offset;
  p.a = args[0];
  p.b = args[1];
  p.c = args[2];
  p.d = args[3];
  if (device().is_cuda()) {
    detail::cuda_random(device().index, data_ptr(), dtype_, numel_, p);
    return *this;
  }
  dispatch_dtype(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = static_cast<T*>(data_ptr());
    const int64_t n = numel_;
#pragma omp parallel for schedule(static) if (n > kParallelMin / 16)
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t e = p.offset + uint64_t(i);
      float v;
      if (p.kind == detail::RandomKind::uniform) {
        v = rng::uniform_value(p.seed, e, p.a, p.b);
      } else if (p.kind == detail::RandomKind::normal) {
        v = rng::normal_value(p.seed, e, p.a, p.b);
      } else {
        v = rng::trunc_normal_value(p.seed, e, p.a, p.b, p.c, p.d);
      }
      out[i] = cast_value<T>(v);
    }
  });
  return *this;
}

Tensor& Tensor::uniform_(uint64_t seed, uint64_t offset, double lo, double hi) {
  CNN_CHECK(lo <= hi, "Tensor::uniform_: expected lo <= hi, got [", lo, ", ", hi, "]");
  const float args[4] = {float(lo), float(hi), 0.f, 0.f};
  return random_(int(detail::RandomKind::uniform), seed, offset, args);
}

Tensor& Tensor::normal_(uint64_t seed, uint64_t offset, double mean, double stddev) {
  CNN_CHECK(stddev >= 0, "Tensor::normal_: expected stddev >= 0, got ", stddev);
  const float args[4] = {float(mean), float(stddev), 0.f, 0.f};
  return random_(int(detail::RandomKind::normal), seed, offset, args);
}

Tensor& Tensor::trunc_normal_(uint64_t seed, uint64_t offset, double mean, double stddev, double lo, double hi) {
  CNN_CHECK(stddev >= 0, "Tensor::trunc_normal_: expected stddev >= 0, got ", stddev);
  CNN_CHECK(lo < hi, "Tensor::trunc_normal_: expected lo < hi, got [", lo, ", ", hi, "]");
  const float args[4] = {float(mean), float(stddev), float(lo), float(hi)};
  return random_(int(detail::RandomKind::trunc_normal), seed, offset, args);
}

// ---- autograd ---------------------------------------------------------------------------------------------------

bool Tensor::requires_grad() const { return meta_ && meta_->requires_grad; }

Tensor& Tensor::set_requires_grad(bool on) {
  CNN_CHECK(defined(), "Tensor::set_requires_grad: undefined tensor");
  CNN_CHECK(!on || dtype_is_floating(dtype_), "Tensor::set_requires_grad: only floating tensors can require grad, got ",
            str());
  CNN_CHECK(is_leaf(), "Tensor::set_requires_grad: only leaf tensors (not produced by a recorded op), got ", str());
  if (!meta_) meta_ = std::make_shared<AutogradMeta>();
  meta_->requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const { return !meta_ || meta_->is_leaf; }

Tensor Tensor::grad() const { return meta_ ? meta_->grad : Tensor(); }

void Tensor::zero_grad() {
  if (meta_ && meta_->grad.defined()) meta_->grad.fill_(0.0);
}

void Tensor::reset_grad() {
  if (meta_) meta_->grad = Tensor();
}

}  // namespace cnn
