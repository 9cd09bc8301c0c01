// AVX2+FMA build of the CPU depthwise-conv row kernels (cpu/kernels.h); used only when the CPU reports both.
// Standard headers come before the target pragma so that no shared inline code is compiled for AVX2.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/dwconv/cpu/impl.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace cnn::dwconv::cpu::avx2 {
// 16 YMM registers: 12 accumulators + the shared operand (2 vectors for 16 channels, 1 for 8).
using Block16 = V8;
constexpr int kNv16 = 2;
constexpr int kTile16 = 6, kTile8 = 12, kTile1 = 12;
constexpr int kPairTile16 = 0;  // two rows of 16 channels would not fit in 16 registers
constexpr int kBfcTile16 = kTile16;  // backward-filter tile width
}  // namespace cnn::dwconv::cpu::avx2

#define CNN_DWCONV_CPU_NS avx2
#include "kernels/dwconv/cpu/kernels.h"
#undef CNN_DWCONV_CPU_NS

#pragma GCC pop_options
