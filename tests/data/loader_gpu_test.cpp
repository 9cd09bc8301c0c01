// Device batches (pinned staging, async copy on the copy stream, event wait on the compute stream) equal the host
// batches of the same configuration, f32 and f16, including the short last batch and a resumed epoch.
#include <gtest/gtest.h>

#include "core/context.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "tests/data/jpeg_tree.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

class LoaderGpu : public test::ScratchDir {};

TEST_F(LoaderGpu, DeviceBatchesEqualHostBatches) {
  CNN_REQUIRE_GPU();
  test::write_id_tree(dir_, 45, 3, 20, 14);
  auto ds = std::make_shared<data::ImageFolderDataset>(dir_.string(), "train");
  for (DType dtype : {DType::f32, DType::f16}) {
    data::LoaderConfig c;
    c.batch_size = 8;
    c.workers = 3;
    c.prefetch = 2;  // few slots, so pinned buffers are reused while earlier copies may be in flight
    c.drop_last = false;
    c.seed = 5;
    c.dtype = dtype;
    c.transform.image_size = 12;
    data::DataLoader host(ds, c);
    c.device = Device::cuda(0);
    data::DataLoader device(ds, c);
    for (int64_t first : {0, 3}) {
      host.start_epoch(1, first);
      device.start_epoch(1, first);
      int64_t batches = 0;
      while (std::optional<data::Batch> h = host.next()) {
        std::optional<data::Batch> d = device.next();
        ASSERT_TRUE(d.has_value()) << "device loader ended early at batch " << h->batch;
        EXPECT_TRUE(d->images.device().is_cuda());
        EXPECT_EQ(d->indices, h->indices);
        // A kernel on the compute stream (the copy to the host below) must see the finished upload.
        EXPECT_TRUE(test::bitwise_equal(h->images, d->images, str_cat(dtype_name(dtype), " batch ", h->batch)));
        EXPECT_TRUE(test::bitwise_equal(h->labels, d->labels, str_cat("labels batch ", h->batch)));
        ++batches;
      }
      EXPECT_FALSE(device.next().has_value());
      EXPECT_EQ(batches, 6 - first);
    }
  }
}

}  // namespace
}  // namespace cnn
