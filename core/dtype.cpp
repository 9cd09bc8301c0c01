// DType names and sizes; bit-exact float <-> half / bfloat16 conversion on the host.
#include "core/dtype.h"

#include <cstring>

#include "core/error.h"

namespace cnn {

int64_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::f64: return 8;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::u8: return 1;
  }
  throw Error(str_cat("dtype_size: invalid DType value ", int(t)));
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
  }
  throw Error(str_cat("dtype_name: invalid DType value ", int(t)));
}

DType dtype_from_name(const std::string& s) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64, DType::u8}) {
    if (s == dtype_name(t)) return t;
  }
  throw Error(str_cat("dtype: unknown name '", s, "', expected one of f32, f16, bf16, f64, i32, i64, u8"));
}

bool dtype_is_floating(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64; }

namespace {
uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

uint16_t float_to_half_bits(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t exp = (u >> 23) & 0xffu;
  uint32_t mant = u & 0x7fffffu;
  if (exp == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));  // inf / quiet nan
  const int e = int(exp) - 127 + 15;  // rebiased exponent
  if (e >= 31) return uint16_t(sign | 0x7c00u);  // overflow: inf
  if (e <= 0) {
    // Subnormal half (or zero): shift the full significand (with the implicit 1) right, round to nearest even.
    if (e < -10) return sign;  // below half the smallest subnormal: rounds to zero
    mant |= 0x800000u;
    const int shift = 14 - e;  // 24-bit significand -> 10-bit subnormal field
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = (uint32_t(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is the correct rounding
  return uint16_t(sign | h);
}

float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal: normalize the significand.
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while ((mant & 0x400u) == 0);
    return bits_float(sign | (uint32_t(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13));
  }
  return bits_float(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // nan stays a (quiet) nan
  const uint32_t lsb = (u >> 16) & 1u;
  return uint16_t((u + 0x7fffu + lsb) >> 16);
}

float bf16_bits_to_float(uint16_t b) { return bits_float(uint32_t(b) << 16); }

}  // namespace cnn
