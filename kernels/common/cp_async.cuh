// Thin wrappers over the sm_80+ asynchronous global->shared copy (PTX cp.async) and its commit/wait groups.
// A false predicate copies zero bytes from global and zero-fills the destination (implicit padding).
#pragma once

#include <cstdint>

namespace cnn::cuda {

// 16 bytes, cached in L2 only (.cg): for data without spatial reuse in L1, e.g. filter rows.
__device__ __forceinline__ void cp_async_cg16(void* smem_dst, const void* gmem_src, bool pred) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  const int src_bytes = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes));
}

// 16 bytes, allocated in L1 too (.ca): for inputs that neighbouring tiles re-read.
__device__ __forceinline__ void cp_async_ca16(void* smem_dst, const void* gmem_src, bool pred) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  const int src_bytes = pred ? 16 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes));
}

// 8 bytes through L1 (.ca; .cg only exists for 16): for layouts whose 16-byte global chunks split in shared memory.
__device__ __forceinline__ void cp_async_ca8(void* smem_dst, const void* gmem_src, bool pred) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  const int src_bytes = pred ? 8 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes));
}

// 4 bytes through L1: for layouts that split a position's channels further (channel-pair planes).
__device__ __forceinline__ void cp_async_ca4(void* smem_dst, const void* gmem_src, bool pred) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  const int src_bytes = pred ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most kPending committed groups of this thread are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

}  // namespace cnn::cuda
