// Thin wrapper over the sm_80+ warp-level tensor-core MMA (PTX mma.sync) used by the FP16 depthwise kernels.
#pragma once

namespace cnn::cuda {

// D += A * B, m16n8k8, A 16x8 (row), B 8x8 (col), FP16 operands, FP32 accumulators. PTX ISA fragment layouts, with
// g = lane / 4 and t = lane % 4: A regs {A[g][2t..2t+1]}, {A[g+8][2t..2t+1]}; B reg {B[2t..2t+1][g]}; D
// {D[g][2t..2t+1]}, {D[g+8][2t..2t+1]}. volatile keeps the MMAs in source order relative to the other volatile asm
// (cp.async): measured on the H200, the ring kernel ran up to 6% slower at 13x13 when the compiler could move them.
__device__ __forceinline__ void mma_m16n8k8(float (&d)[4], unsigned a0, unsigned a1, unsigned b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a0), "r"(a1), "r"(b));
}

// D += A * B, m16n8k16, A 16x16 (row), B 16x8 (col), FP16 operands, FP32 accumulators: A regs {A[g][2t..2t+1]},
// {A[g+8][2t..2t+1]}, {A[g][2t+8..2t+9]}, {A[g+8][2t+8..2t+9]}; B regs {B[2t..2t+1][g]}, {B[2t+8..2t+9][g]}; D as
// m16n8k8's.
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                             unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

}  // namespace cnn::cuda
