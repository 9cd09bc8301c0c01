// Context: one per device, CPU threads, CUDA handles and workspace (GPU suites run on the GPU machine).
#include <gtest/gtest.h>

#include "core/allocator.h"
#include "core/context.h"
#include "core/error.h"
#include "tests/support/numeric.h"
#if defined(CNN_WITH_CUDA)
#include "core/cuda_context.h"
#endif

namespace cnn {
namespace {

TEST(Context, OnePerDeviceAndCpuThreads) {
  Context& a = Context::get(Device::cpu());
  Context& b = Context::get(Device::parse("cpu"));
  EXPECT_EQ(&a, &b);
  const int before = a.cpu_threads();
  a.set_cpu_threads(1);
  EXPECT_EQ(a.cpu_threads(), 1);
  a.set_cpu_threads(before);
  EXPECT_THROW(a.set_cpu_threads(0), Error);
  EXPECT_THROW(a.cuda(), Error);
  EXPECT_NO_THROW(a.synchronize());
}

#if defined(CNN_WITH_CUDA)
TEST(ContextGpu, HandlesStreamsAndWorkspace) {
  CNN_REQUIRE_GPU();
  Context& ctx = Context::get(Device::cuda(0));
  EXPECT_EQ(&ctx, &Context::get(Device::parse("cuda")));
  CudaContext& c = ctx.cuda();
  EXPECT_NE(c.compute_stream(), nullptr);
  EXPECT_NE(c.copy_stream(), c.compute_stream());
  EXPECT_NE(c.cublas(), nullptr);
  EXPECT_EQ(c.cublas(), c.cublas());  // created once
  EXPECT_NE(c.cublaslt(), nullptr);
  EXPECT_NE(c.cudnn(), nullptr);
  void* w1 = c.workspace(1000);
  EXPECT_NE(w1, nullptr);
  EXPECT_EQ(c.workspace(500), w1);  // smaller requests reuse the buffer
  c.workspace(10 << 20);
  EXPECT_GE(c.workspace_bytes(), size_t(10 << 20));
  ctx.synchronize();
}
#endif

}  // namespace
}  // namespace cnn
