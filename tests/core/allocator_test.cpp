// Size classes, host allocator statistics, and the caching CUDA allocator (GPU suites run on the GPU machine).
#include <gtest/gtest.h>

#include "core/allocator.h"
#include "core/context.h"
#include "core/error.h"
#include "core/tensor.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

TEST(Allocator, SizeClasses) {
  EXPECT_EQ(cuda_size_class(0), 0u);
  EXPECT_EQ(cuda_size_class(1), 512u);
  EXPECT_EQ(cuda_size_class(512), 512u);
  EXPECT_EQ(cuda_size_class(513), 1024u);
  EXPECT_EQ(cuda_size_class((1u << 20) - 1), 1u << 20);  // just below 1 MiB: 512-byte multiple
  EXPECT_EQ(cuda_size_class(1u << 20), 2u << 20);        // from 1 MiB: 2 MiB multiples
  EXPECT_EQ(cuda_size_class((2u << 20) + 1), 4u << 20);
  EXPECT_THROW(cuda_size_class(~size_t(0)), Error);
}

TEST(Allocator, FormatBytes) {
  EXPECT_EQ(format_bytes(512), "512.00 B (512 bytes)");
  EXPECT_EQ(format_bytes(3 << 20), "3.00 MiB (3145728 bytes)");
}

TEST(Allocator, HostStatsTrackUse) {
  const AllocatorStats before = host_allocator_stats();
  {
    Tensor t = Tensor::empty({1000}, DType::f64, Device::cpu(), "stats");
    EXPECT_EQ(host_allocator_stats().bytes_in_use, before.bytes_in_use + 8000);
    EXPECT_GE(host_allocator_stats().peak_bytes_in_use, before.bytes_in_use + 8000);
  }
  EXPECT_EQ(host_allocator_stats().bytes_in_use, before.bytes_in_use);
}

TEST(Allocator, PinnedFallsBackToAlignedWithoutDevice) {
  if (test::has_cuda_device()) GTEST_SKIP() << "a CUDA device is present; pinned memory is page-locked there";
  bool pinned = true;
  void* p = pinned_alloc(1000, "staging", &pinned);
  EXPECT_FALSE(pinned);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHostAlignment, 0u);
  pinned_free(p, 1000, pinned);
}

TEST(AllocatorGpu, StatsReuseAndEmptyCache) {
  CNN_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  Context::get(gpu).synchronize();
  cuda_empty_cache(0);
  const AllocatorStats s0 = cuda_allocator_stats(0);
  EXPECT_EQ(s0.bytes_cached, 0);
  void* first = nullptr;
  {
    Tensor a = Tensor::empty({1000}, DType::f32, gpu, "a");  // 4000 B -> 4096 B class
    first = a.data_ptr();
    const AllocatorStats s1 = cuda_allocator_stats(0);
    EXPECT_EQ(s1.bytes_in_use, s0.bytes_in_use + 4096);
    EXPECT_GE(s1.peak_bytes_in_use, s1.bytes_in_use);
  }
  const AllocatorStats s2 = cuda_allocator_stats(0);
  EXPECT_EQ(s2.bytes_in_use, s0.bytes_in_use);
  EXPECT_EQ(s2.bytes_cached, 4096);
  {
    Tensor b = Tensor::empty({1020}, DType::f32, gpu, "b");  // same 4096 B class: served from the cache
    EXPECT_EQ(b.data_ptr(), first);
    const AllocatorStats s3 = cuda_allocator_stats(0);
    EXPECT_EQ(s3.num_cache_hits, s2.num_cache_hits + 1);
    EXPECT_EQ(s3.num_device_allocs, s2.num_device_allocs);
    EXPECT_EQ(s3.bytes_cached, 0);
  }
  {
    Tensor big = Tensor::empty({3 << 20}, DType::f32, gpu, "big");  // 12 MiB -> 12 MiB class (2 MiB multiple)
    EXPECT_EQ(cuda_allocator_stats(0).bytes_in_use, s0.bytes_in_use + (12 << 20));
  }
  EXPECT_EQ(cuda_allocator_stats(0).bytes_cached, 4096 + (12 << 20));
  cuda_empty_cache(0);
  EXPECT_EQ(cuda_allocator_stats(0).bytes_cached, 0);
}

TEST(AllocatorGpu, OutOfMemoryNamesTheTensorAndUse) {
  CNN_REQUIRE_GPU();
  try {
    Tensor t = Tensor::empty({int64_t(1) << 40}, DType::f32, Device::cuda(0), "gpu_huge_activation");  // 4 TiB
    FAIL() << "a 4 TiB allocation succeeded";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("out of memory on cuda:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("gpu_huge_activation"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4.00 TiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("in use"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cached"), std::string::npos) << msg;
  }
  Tensor ok = Tensor::zeros({16}, DType::f32, Device::cuda(0));  // the allocator still works afterwards
  EXPECT_EQ(ok.to(Device::cpu()).to_vector<float>(), std::vector<float>(16, 0.f));
}

TEST(AllocatorGpu, PinnedIsPageLocked) {
  CNN_REQUIRE_GPU();
  bool pinned = false;
  void* p = pinned_alloc(1 << 20, "staging", &pinned);
  EXPECT_TRUE(pinned);
  pinned_free(p, 1 << 20, pinned);
}

}  // namespace
}  // namespace cnn
