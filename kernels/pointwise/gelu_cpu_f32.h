// The f32 CPU GELU with the instruction set chosen by the caller, for tests that check every build this CPU runs;
// gelu_forward_cpu / gelu_backward_cpu (pointwise.h) use the widest supported one.
#pragma once

#include <cstdint>

namespace cnn::kernels::gelu_f32 {

enum class Isa { generic, avx2, avx512 };  // generic: baseline x86-64 (SSE2); avx2: AVX2 + FMA; avx512: F, DQ, VL
Isa best_isa();
bool isa_supported(Isa isa);

void forward(Isa isa, const float* x, float* y, int64_t n);
void backward(Isa isa, const float* x, const float* dy, float* dx, int64_t n);

}  // namespace cnn::kernels::gelu_f32
