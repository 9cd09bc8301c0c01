// AVX-512 build of the CPU depthwise-conv row kernels (cpu/kernels.h); used only when the CPU reports
// AVX-512F and AVX-512VL (FMA and AVX2 come with them on every such CPU).
// Standard headers come before the target pragma so that no shared inline code is compiled for AVX-512.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/dwconv/cpu/impl.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx2,fma")

namespace cnn::dwconv::cpu::avx512 {
// 32 ZMM/YMM registers: 14 accumulators of one 16-channel (or 8-channel) vector each + the shared operand.
using Block16 = V16;
constexpr int kNv16 = 1;
constexpr int kTile16 = 14, kTile8 = 14, kTile1 = 12;
// Two-row tiles of 16 channels: 2 x 8 accumulators (with the input rows prefetched, 8 beats 7; at 9 GCC moves and
// spills).
constexpr int kPairTile16 = 8;
// Backward-filter tiles of 7 filter columns run as 2 interleaved ow streams (14 accumulators) that share x loads.
constexpr int kBfcTile16 = 7;
}  // namespace cnn::dwconv::cpu::avx512

#define CNN_DWCONV_CPU_NS avx512
#include "kernels/dwconv/cpu/kernels.h"
#undef CNN_DWCONV_CPU_NS

#pragma GCC pop_options
