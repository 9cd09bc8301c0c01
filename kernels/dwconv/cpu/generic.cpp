// Baseline x86-64 (SSE2) build of the CPU depthwise-conv row kernels (cpu/kernels.h), for CPUs without AVX2.
#include "kernels/dwconv/cpu/impl.h"

// The 32-byte vector helpers are always inlined into this file's row kernels: no call crosses an ABI boundary.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace cnn::dwconv::cpu::generic {
// 16 XMM registers and an 8-channel vector takes two: 6 accumulating vectors for 16 channels, 6 for 8.
using Block16 = V8;
constexpr int kNv16 = 2;
constexpr int kTile16 = 3, kTile8 = 6, kTile1 = 12;
constexpr int kPairTile16 = 0;  // two rows of 16 channels would not fit in 16 registers
constexpr int kBfcTile16 = kTile16;  // backward-filter tile width
}  // namespace cnn::dwconv::cpu::generic

#define CNN_DWCONV_CPU_NS generic
#include "kernels/dwconv/cpu/kernels.h"
#undef CNN_DWCONV_CPU_NS
