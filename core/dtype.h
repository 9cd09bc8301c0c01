// Element types of tensors (f32, f16, bf16, f64, i32, i64, u8) and host-side IEEE half / bfloat16 conversion
// (round-to-nearest-even; inf, nan and subnormals exact). Half and BFloat16 are 2-byte bit containers.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>
#include <string>

namespace cnn {

enum class DType : uint8_t { f32, f16, bf16, f64, i32, i64, u8 };

int64_t dtype_size(DType t);
const char* dtype_name(DType t);          // "f32", "f16", ...
DType dtype_from_name(const std::string& s);  // inverse of dtype_name; throws cnn::Error on unknown names
bool dtype_is_floating(DType t);

// float <-> binary16 bits; NaN keeps its sign and becomes a quiet NaN, overflow rounds to inf.
uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
// float <-> bfloat16 bits (upper half of the float, rounded to nearest even; NaN stays NaN).
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t b);

struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(float_to_half_bits(f)) {}
  explicit operator float() const { return half_bits_to_float(bits); }
  static Half from_bits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(float_to_bf16_bits(f)) {}
  explicit operator float() const { return bf16_bits_to_float(bits); }
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

// C++ type of each DType on the host.
template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::f32; }
template <>
constexpr DType dtype_of<Half>() { return DType::f16; }
template <>
constexpr DType dtype_of<BFloat16>() { return DType::bf16; }
template <>
constexpr DType dtype_of<double>() { return DType::f64; }
template <>
constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <>
constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <>
constexpr DType dtype_of<uint8_t>() { return DType::u8; }

#if defined(__CUDACC__)
#define CNN_HOST_DEVICE __host__ __device__
#else
#define CNN_HOST_DEVICE
#endif

// Floating -> integer conversion, identical on host and device: truncation toward zero, saturated to the integer
// type's range, NaN -> 0 (a plain static_cast is undefined out of range and differs between CPU and GPU).
template <class To>
CNN_HOST_DEVICE constexpr To saturating_int_cast(double w) {
  if (!(w == w)) return To(0);
  constexpr To lo = std::numeric_limits<To>::lowest(), hi = std::numeric_limits<To>::max();
  if (w <= static_cast<double>(lo)) return lo;
  if (w >= static_cast<double>(hi)) return hi;
  return static_cast<To>(w);
}

// Converts between any two host element types (half types go through float; floating -> integer saturates).
template <class To, class From>
To cast_value(From v) {
  if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return cast_value<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return saturating_int_cast<To>(static_cast<double>(v));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace cnn
