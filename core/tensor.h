// Tensor: a view (shape, strides in elements, offset) onto shared Storage, with dtype, device and autograd info.
// Contiguous row-major (NHWC for images) is the normal case; slice / reshape / permute make views without copies.
// Element counts are int64. View methods are not differentiable; differentiable ops live in layers/functional.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/storage.h"

namespace cnn {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "(2, 3, 4)"
int64_t shape_numel(const Shape& s);    // throws on negative extents or int64 overflow
Shape contiguous_strides(const Shape& s);

constexpr int kMaxDims = 8;  // views and strided copies support up to 8 axes

class Tensor;
// Autograd state shared by every copy of a Tensor handle: its address is the tensor's identity on a Tape.
struct AutogradMeta;

class Tensor {
 public:
  Tensor() = default;

  // ---- creation -----------------------------------------------------------------------------------------------
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::cpu(), const std::string& label = "");
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::cpu(), const std::string& label = "");
  static Tensor full(const Shape& shape, double value, DType dtype, Device device = Device::cpu(),
                     const std::string& label = "");
  // Pinned (page-locked) host tensor for asynchronous host<->device copies.
  static Tensor empty_pinned(const Shape& shape, DType dtype, const std::string& label = "");
  // Copies numel(shape) elements of `dtype` from host memory `src`, then moves them to `device`.
  static Tensor from_host(const void* src, const Shape& shape, DType dtype, Device device = Device::cpu(),
                          const std::string& label = "");
  template <class T>
  static Tensor from_vector(const std::vector<T>& v, const Shape& shape, Device device = Device::cpu(),
                            const std::string& label = "") {
    CNN_CHECK(int64_t(v.size()) == shape_numel(shape), "Tensor::from_vector: ", v.size(),
              " values do not fill shape ", shape_str(shape));
    return from_host(v.data(), shape, dtype_of<T>(), device, label);
  }

  // ---- metadata -----------------------------------------------------------------------------------------------
  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int dim() const { return int(shape_.size()); }
  int64_t size(int axis) const;  // negative axes count from the end
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  Device device() const;
  int64_t nbytes() const { return numel_ * dtype_size(dtype_); }
  const std::string& label() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  std::string str() const;  // "f32 (2, 3) cuda:0 'label'" for messages

  // ---- data access --------------------------------------------------------------------------------------------
  void* data_ptr() const;  // address of element 0 of this view
  template <class T>
  T* data() const {
    CNN_CHECK(dtype_of<T>() == dtype_, "Tensor::data: requested ", dtype_name(dtype_of<T>()), " from ", str());
    return static_cast<T*>(data_ptr());
  }
  // Copies the elements (row-major logical order) into host memory of nbytes().
  void copy_to_host(void* dst) const;
  template <class T>
  std::vector<T> to_vector() const {
    CNN_CHECK(dtype_of<T>() == dtype_, "Tensor::to_vector: requested ", dtype_name(dtype_of<T>()), " from ", str());
    std::vector<T> v(static_cast<size_t>(numel_));
    copy_to_host(v.data());
    return v;
  }
  double item() const;  // the single element of a one-element tensor, as double

  // ---- views (no copy; share storage; not differentiable) -----------------------------------------------------
  Tensor slice(int axis, int64_t start, int64_t end) const;  // [start, end) along axis
  Tensor reshape(const Shape& shape) const;                  // contiguous only; one extent may be -1
  Tensor permute(const std::vector<int>& order) const;       // result axis i = input axis order[i]

  // ---- copies and conversion ----------------------------------------------------------------------------------
  Tensor contiguous() const;  // *this when already contiguous
  Tensor clone() const;       // always a new contiguous copy
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;
  Tensor& copy_(const Tensor& src);  // same shape; converts dtype and crosses devices
  Tensor& fill_(double value);
  // this += alpha * x (same shape, floating dtypes; x is converted to this dtype first).
  Tensor& add_(const Tensor& x, double alpha = 1.0);

  // ---- random init: element i (row-major) draws Philox counter offset + i under key seed ---------------------
  Tensor& uniform_(uint64_t seed, uint64_t offset, double lo, double hi);
  Tensor& normal_(uint64_t seed, uint64_t offset, double mean, double stddev);
  // Normal(mean, stddev) restricted to [lo, hi] by rejection.
  Tensor& trunc_normal_(uint64_t seed, uint64_t offset, double mean, double stddev, double lo, double hi);

  // ---- autograd -----------------------------------------------------------------------------------------------
  bool requires_grad() const;
  // Marks a leaf (floating dtype only) as a parameter whose gradient a Tape accumulates into grad().
  Tensor& set_requires_grad(bool on);
  bool is_leaf() const;
  Tensor grad() const;  // FP32 (FP64 for f64 leaves), same shape and device; undefined until a backward reaches it
  void zero_grad();     // fills an existing grad with zeros
  void reset_grad();    // drops the grad tensor
  const std::shared_ptr<AutogradMeta>& autograd_meta() const { return meta_; }
  void set_autograd_meta(std::shared_ptr<AutogradMeta> m) { meta_ = std::move(m); }

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
  DType dtype_ = DType::f32;
  std::shared_ptr<AutogradMeta> meta_;
  Tensor view(Shape shape, Shape strides, int64_t offset) const;
  Tensor& random_(int kind, uint64_t seed, uint64_t offset, const float* args);
};

struct AutogradMeta {
  bool requires_grad = false;
  bool is_leaf = true;
  Tensor grad;  // accumulator of a leaf: FP32, or FP64 for f64 leaves
};

}  // namespace cnn
