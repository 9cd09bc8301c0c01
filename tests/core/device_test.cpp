// Device parsing and availability errors (the CUDA-present case runs on the GPU machine).
#include <gtest/gtest.h>

#include "core/context.h"
#include "core/device.h"
#include "core/error.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

TEST(Device, ParsesValidNames) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:0"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:12"), Device::cuda(12));
  EXPECT_EQ(Device::cuda(3).str(), "cuda:3");
  EXPECT_EQ(Device::cpu().str(), "cpu");
}

TEST(Device, RejectsBadNames) {
  for (const char* bad : {"", "gpu", "CPU", "cuda:", "cuda:-1", "cuda:x", "cuda:1:2", "cuda0", "cuda:123456", " cpu"}) {
    try {
      Device::parse(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("expected 'cpu', 'cuda' or 'cuda:N'"), std::string::npos) << e.what();
    }
  }
}

TEST(Device, CudaWithoutDeviceIsAClearError) {
  if (test::has_cuda_device()) GTEST_SKIP() << "a CUDA device is present; covered by DeviceGpu";
  try {
    require_device(Device::cuda(0), "test");
    FAIL() << "cuda accepted without a device";
  } catch (const Error& e) {
    const std::string msg = e.what();
    const std::string want = cuda_built() ? "no CUDA device is available" : "built without CUDA";
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
  }
  EXPECT_THROW(Context::get(Device::cuda(0)), Error);
}

TEST(DeviceGpu, OrdinalOutOfRangeIsAnError) {
  CNN_REQUIRE_GPU();
  EXPECT_NO_THROW(require_device(Device::cuda(0), "test"));
  try {
    require_device(Device::cuda(cuda_device_count()), "test");
    FAIL() << "out-of-range ordinal accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA device(s) are visible"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cnn
