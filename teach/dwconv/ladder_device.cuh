// Small device helpers shared by the teaching rungs: float4 arithmetic, guarded loads, the filter-width switch and
// the precondition checks every entry point makes. Kept tiny so each rung file still reads on its own.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/cuda_check.h"
#include "core/error.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::teach {

__device__ __forceinline__ void fma4(float4& acc, const float4 a, const float4 b) {
  acc.x = fmaf(a.x, b.x, acc.x);
  acc.y = fmaf(a.y, b.y, acc.y);
  acc.z = fmaf(a.z, b.z, acc.z);
  acc.w = fmaf(a.w, b.w, acc.w);
}

// p[i] through the read-only cache when `ok`, else zeros (padding, or channels past C).
__device__ __forceinline__ float4 load4_or_zero(const float4* p, int64_t i, bool ok) {
  return ok ? __ldg(p + i) : make_float4(0.f, 0.f, 0.f, 0.f);
}

// Same, as a 128-bit load through L1 (ld.global.nc) that stays where the code puts it (volatile, and a memory
// clobber so it does not move across the shared-memory tap loads). In the register-window rungs the compiler would
// otherwise hoist the future loads of a filter row ahead of the FMAs and run out of registers.
__device__ __forceinline__ float4 load4_ordered_or_zero(const float4* p, int i, bool ok) {  // i: offset within a row
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (ok)
    asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p + i)
                 : "memory");
  return v;
}

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Reasons shared by the rungs' unsupported() functions ("" when the condition holds).
inline std::string need_stride1(const dwconv::DwconvParams& p) {
  return p.stride_h == 1 && p.stride_w == 1 ? "" : str_cat("needs stride 1, got ", p.stride_h, "x", p.stride_w);
}
inline std::string need_vectors(const dwconv::DwconvParams& p, int lanes, const void* x, const void* w, const void* y) {
  if (p.c % lanes != 0) return str_cat("needs C % ", lanes, " == 0, got C=", p.c);
  if (!aligned16(x) || !aligned16(w) || !aligned16(y)) return "needs 16-byte aligned x, w, y";
  return "";
}

// Every entry point: the shape is valid, the pointers are set, and the rung handles the shape.
inline void check_rung(const char* op, const dwconv::DwconvParams& p, const void* x, const void* w, const void* y,
                       const std::string& unsupported) {
  p.validate(op);
  dwconv::check_pointers(op, x, "x", w, "w", y, "y");
  CNN_CHECK(unsupported.empty(), op, ": ", unsupported, " (", p.str(), ")");
}

// Filter widths the register-window rungs are compiled for: the window's ring indices must be compile-time
// constants to stay in registers, so FW is a template parameter.
inline constexpr int kWindowWidths[] = {1, 3, 5, 7, 9, 11, 13, 17, 31, 51};

inline bool window_width_supported(int fw) {
  for (int w : kWindowWidths)
    if (w == fw) return true;
  return false;
}

// Calls f(std::integral_constant<int, FW>{}) for the run-time width fw (one of kWindowWidths).
template <class F>
void with_window_width(int fw, F&& f) {
  switch (fw) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    case 5:
      return f(std::integral_constant<int, 5>{});
    case 7:
      return f(std::integral_constant<int, 7>{});
    case 9:
      return f(std::integral_constant<int, 9>{});
    case 11:
      return f(std::integral_constant<int, 11>{});
    case 13:
      return f(std::integral_constant<int, 13>{});
    case 17:
      return f(std::integral_constant<int, 17>{});
    case 31:
      return f(std::integral_constant<int, 31>{});
    case 51:
      return f(std::integral_constant<int, 51>{});
  }
  throw Error(str_cat("teach dwconv: no register-window kernel compiled for filter width ", fw));
}

}  // namespace cnn::teach
