// Run-time DType -> compile-time host type switch: dispatch_dtype(t, [&](auto tag) { using T = decltype(tag)::type; }).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"

namespace cnn {

template <class T>
struct TypeTag {
  using type = T;
};

template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(TypeTag<float>{});
    case DType::f16: return f(TypeTag<Half>{});
    case DType::bf16: return f(TypeTag<BFloat16>{});
    case DType::f64: return f(TypeTag<double>{});
    case DType::i32: return f(TypeTag<int32_t>{});
    case DType::i64: return f(TypeTag<int64_t>{});
    case DType::u8: return f(TypeTag<uint8_t>{});
  }
  throw Error(str_cat("dispatch_dtype: invalid DType value ", int(t)));
}

// CPU compute kernels run in f32 and f64 only; `op` names the caller in the error.
template <class F>
decltype(auto) dispatch_cpu_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32: return f(TypeTag<float>{});
    case DType::f64: return f(TypeTag<double>{});
    default: break;
  }
  throw Error(str_cat(op, ": dtype ", dtype_name(t), " is not supported on cpu (expected f32 or f64)"));
}

}  // namespace cnn
