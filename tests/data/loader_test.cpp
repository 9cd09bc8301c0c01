// DataLoader on id-encoding JPEG trees: coverage and labels per epoch, deterministic order, identical batches for
// any worker count, resume, sharding, bad files skipped and counted, the bad-data budget, config errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "core/error.h"
#include "data/dataset.h"
#include "data/fashion_mnist.h"
#include "data/image_decode.h"
#include "data/loader.h"
#include "data/sampler.h"
#include "tests/data/jpeg_tree.h"
#include "tests/support/numeric.h"

namespace cnn {
namespace {

namespace fs = std::filesystem;

constexpr int kSamples = 60, kClasses = 4;

class Loader : public test::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    paths_ = test::write_id_tree(dir_, kSamples, kClasses, 16, 12);
  }
  std::shared_ptr<data::ImageFolderDataset> dataset() {
    return std::make_shared<data::ImageFolderDataset>(dir_.string(), "train");
  }
  static data::LoaderConfig config(int workers) {
    data::LoaderConfig c;
    c.batch_size = 8;
    c.workers = workers;
    c.prefetch = 3;
    c.seed = 1234;
    c.drop_last = false;
    c.transform.augment = data::Augment::train;
    c.transform.image_size = 8;
    c.transform.mean = {0, 0, 0};  // pixel / 255, so test::decode_id reads the ids back
    c.transform.std = {1, 1, 1};
    return c;
  }
  static std::vector<data::Batch> epoch(data::DataLoader& loader, int64_t e, int64_t first = 0) {
    loader.start_epoch(e, first);
    std::vector<data::Batch> out;
    while (std::optional<data::Batch> b = loader.next()) out.push_back(std::move(*b));
    return out;
  }
  // Pixel ids of every row, checking each row's id against the file the loader says it read.
  static std::vector<int> ids(const std::vector<data::Batch>& batches, const data::Dataset& ds) {
    std::vector<int> out;
    for (const data::Batch& b : batches) {
      for (int64_t r = 0; r < b.images.size(0); ++r) {
        const int id = test::decode_id(b.images, r);
        EXPECT_EQ(id, test::id_of_path(ds.sample_name(b.indices[size_t(r)]))) << "batch " << b.batch << " row " << r;
        EXPECT_EQ(b.labels.data<int64_t>()[r], id % kClasses) << "label of id " << id;
        out.push_back(id);
      }
    }
    return out;
  }
  std::vector<fs::path> paths_;
};

TEST_F(Loader, EverySampleOncePerEpochWithItsLabel) {
  auto ds = dataset();
  data::DataLoader loader(ds, config(2));
  EXPECT_EQ(loader.batches_per_epoch(), 8);  // ceil(60 / 8)
  const std::vector<data::Batch> batches = epoch(loader, 0);
  ASSERT_EQ(batches.size(), 8u);
  EXPECT_EQ(batches.back().images.shape(), (Shape{4, 8, 8, 3}));
  EXPECT_EQ(batches[0].images.dtype(), DType::f32);
  std::vector<int> seen = ids(batches, *ds);
  std::sort(seen.begin(), seen.end());
  std::vector<int> all(kSamples);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(seen, all);
  EXPECT_EQ(loader.bad_samples(), 0);
}

TEST_F(Loader, OrderDependsOnSeedAndEpochOnly) {
  auto ds = dataset();
  data::DataLoader a(ds, config(2)), b(ds, config(2));
  const std::vector<int> e0 = ids(epoch(a, 0), *ds), again = ids(epoch(b, 0), *ds), e1 = ids(epoch(a, 1), *ds);
  EXPECT_EQ(e0, again) << "seed 1234 epoch 0 twice";
  EXPECT_NE(e0, e1) << "seed 1234 epochs 0 and 1";
  data::LoaderConfig other = config(2);
  other.seed = 99;
  data::DataLoader c(ds, other);
  EXPECT_NE(e0, ids(epoch(c, 0), *ds)) << "seeds 1234 and 99";
  other.shuffle = false;
  data::DataLoader d(ds, other);
  const std::vector<data::Batch> plain = epoch(d, 3);
  for (size_t k = 0; k < plain[0].indices.size(); ++k) EXPECT_EQ(plain[0].indices[k], int64_t(k));
}

TEST_F(Loader, SameBatchesWithOneOrThreeWorkers) {
  auto ds = dataset();
  data::DataLoader one(ds, config(1)), three(ds, config(3));
  for (int64_t e : {0, 5}) {
    const std::vector<data::Batch> x = epoch(one, e), y = epoch(three, e);
    ASSERT_EQ(x.size(), y.size());
    for (size_t k = 0; k < x.size(); ++k) {
      EXPECT_TRUE(test::bitwise_equal(x[k].images, y[k].images, str_cat("epoch ", e, " batch ", k, " images")));
      EXPECT_TRUE(test::bitwise_equal(x[k].labels, y[k].labels, str_cat("epoch ", e, " batch ", k, " labels")));
    }
  }
}

TEST_F(Loader, RecycledHostBuffersKeepBatchesIntact) {
  // Dropping each batch lets the loader reuse its buffers; a batch still held must never be overwritten.
  auto ds = dataset();
  data::DataLoader held(ds, config(2)), streamed(ds, config(3));
  const std::vector<data::Batch> reference = epoch(held, 7);
  streamed.start_epoch(7);
  data::Batch kept;
  for (size_t k = 0; k < reference.size(); ++k) {
    std::optional<data::Batch> b = streamed.next();
    ASSERT_TRUE(b.has_value());
    EXPECT_TRUE(test::bitwise_equal(reference[k].images, b->images, str_cat("streamed batch ", k)));
    if (k == 1) kept = *b;  // held across the rest of the epoch
  }
  EXPECT_TRUE(test::bitwise_equal(reference[1].images, kept.images, "batch 1 held to the end"));
}

TEST_F(Loader, ResumeMidEpochGivesTheRemainingBatches) {
  auto ds = dataset();
  data::DataLoader full(ds, config(2));
  const std::vector<data::Batch> all = epoch(full, 2);
  // A fresh loader (another process after a restart) resumes epoch 2 at batch 5.
  data::DataLoader resumed(ds, config(3));
  const std::vector<data::Batch> rest = epoch(resumed, 2, 5);
  ASSERT_EQ(rest.size(), all.size() - 5);
  for (size_t k = 0; k < rest.size(); ++k) {
    EXPECT_EQ(rest[k].batch, int64_t(k + 5));
    EXPECT_TRUE(test::bitwise_equal(all[k + 5].images, rest[k].images, str_cat("batch ", k + 5)));
    EXPECT_EQ(all[k + 5].indices, rest[k].indices);
  }
  // Abandoning an epoch midway and starting another one works too.
  full.start_epoch(0);
  ASSERT_TRUE(full.next().has_value());
  EXPECT_EQ(epoch(full, 2).size(), all.size());
  EXPECT_THROW(full.start_epoch(2, 9), Error);
}

TEST_F(Loader, ShardsAreDisjointCoveringAndEqual) {
  auto ds = dataset();
  for (bool drop_last : {true, false}) {
    std::multiset<int> seen;
    std::vector<int64_t> counts;
    for (int rank = 0; rank < 7; ++rank) {
      data::LoaderConfig c = config(2);
      c.rank = rank;
      c.world_size = 7;
      c.drop_last = drop_last;
      data::DataLoader loader(ds, c);
      const std::vector<int> got = ids(epoch(loader, 4), *ds);
      counts.push_back(int64_t(got.size()));
      seen.insert(got.begin(), got.end());
    }
    // 60 samples over 7 ranks: 8 each (drop_last: 56, disjoint) or 9 each (63: 3 wrap around).
    const int64_t per_rank = drop_last ? 8 : 9;
    for (int64_t n : counts) EXPECT_EQ(n, per_rank) << "drop_last " << drop_last;
    const std::set<int> distinct(seen.begin(), seen.end());
    EXPECT_EQ(int64_t(distinct.size()), drop_last ? 56 : 60) << "drop_last " << drop_last;
    EXPECT_EQ(int64_t(seen.size()), per_rank * 7);
  }
}

TEST(Sampler, PermutationAndShardProperties) {
  const std::vector<int64_t> p = data::epoch_permutation(1000, 7, 3, true);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[size_t(i)], i);
  EXPECT_NE(p, data::epoch_permutation(1000, 7, 4, true));
  EXPECT_EQ(p, data::epoch_permutation(1000, 7, 3, true));
  std::set<int64_t> all;
  for (int r = 0; r < 3; ++r) {
    const std::vector<int64_t> s = data::shard(p, r, 3, true);
    EXPECT_EQ(s.size(), 333u);
    all.insert(s.begin(), s.end());
  }
  EXPECT_EQ(all.size(), 999u);
  EXPECT_EQ(data::batch_count(333, 64, true), 5);
  EXPECT_EQ(data::batch_count(333, 64, false), 6);
  EXPECT_THROW(data::shard(p, 3, 3, true), Error);
}

TEST_F(Loader, BadFilesAreSkippedCountedAndReplacedByTheNextIndex) {
  // id 5: truncated JPEG, id 20: garbage, id 33: empty; each is replaced by the next file in index order.
  const std::vector<uint8_t> good = data::read_file(paths_[5].string());
  test::write_bytes(paths_[5], std::vector<uint8_t>(good.begin(), good.begin() + std::ptrdiff_t(good.size() / 2)));
  test::write_bytes(paths_[20], {'n', 'o', 't', ' ', 'a', 'n', ' ', 'i', 'm', 'a', 'g', 'e'});
  test::write_bytes(paths_[33], {});
  auto ds = dataset();
  data::LoaderConfig c = config(3);
  c.max_bad_fraction = 0.1;  // 3 of 60 bad is 5%
  data::DataLoader loader(ds, c);
  for (int64_t e : {0, 1}) {
    const std::vector<data::Batch> batches = epoch(loader, e);
    for (const data::Batch& b : batches) EXPECT_EQ(b.images.size(0), b.batch < 7 ? 8 : 4);
    std::map<int, int> count;
    for (int id : ids(batches, *ds)) ++count[id];
    EXPECT_EQ(loader.bad_samples(), 3);
    for (int bad : {5, 20, 33}) EXPECT_EQ(count.count(bad), 0u) << "bad id " << bad << " epoch " << e;
    // The next index in the data set's order (c<id % 4>/img_<id>) follows each bad one within its class folder.
    for (int replacement : {9, 24, 37}) EXPECT_EQ(count[replacement], 2) << "id " << replacement << " epoch " << e;
  }
}

TEST_F(Loader, TooManyBadFilesStopWithAClearError) {
  test::write_bytes(paths_[3], {});
  test::write_bytes(paths_[4], {});
  auto ds = dataset();
  data::LoaderConfig c = config(2);
  c.max_bad_fraction = 0.02;  // 1.2 of 60 samples allowed: the second bad one stops the run
  data::DataLoader loader(ds, c);
  loader.start_epoch(0);
  const std::string msg = test::error_of([&] {
    while (loader.next()) {
    }
  });
  EXPECT_NE(msg.find("2 of 60 samples are bad"), std::string::npos) << msg;
  EXPECT_NE(msg.find("max_bad_fraction"), std::string::npos) << msg;
  EXPECT_NE(msg.find("img_00"), std::string::npos) << msg;
}

TEST_F(Loader, HalfPrecisionMatchesFloat) {
  auto ds = dataset();
  data::LoaderConfig c = config(2);
  data::DataLoader f32(ds, c);
  c.dtype = DType::f16;
  data::DataLoader f16(ds, c);
  const std::vector<data::Batch> a = epoch(f32, 0), b = epoch(f16, 0);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(b[0].images.dtype(), DType::f16);
  // The f16 batch is the f32 batch rounded to half (same decode and geometry): exact after conversion.
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(test::bitwise_equal(a[k].images.to(DType::f16), b[k].images));
}

TEST_F(Loader, ConfigErrors) {
  auto ds = dataset();
  data::LoaderConfig c = config(2);
  c.rank = 2;
  c.world_size = 2;
  EXPECT_THROW(data::DataLoader(ds, c), Error);
  c = config(0);
  EXPECT_THROW(data::DataLoader(ds, c), Error);
  c = config(1);
  c.dtype = DType::i64;
  EXPECT_THROW(data::DataLoader(ds, c), Error);
  c = config(1);
  c.transform.mean = {0.5f};  // 3-channel data
  EXPECT_THROW(data::DataLoader(ds, c), Error);
  data::DataLoader loader(ds, config(1));
  EXPECT_FALSE(loader.next().has_value()) << "next() before start_epoch";
}

TEST(LoaderFashionMnist, BatchesMatchTheIdxReader) {
  if (!fs::exists(std::string(data::kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST not installed at " << data::kFashionMnistDir;
  }
  auto ds = std::make_shared<data::FashionMnistDataset>(data::kFashionMnistDir, "test");
  data::LoaderConfig c;
  c.batch_size = 100;
  c.workers = 2;
  c.shuffle = false;
  c.transform.augment = data::Augment::none;
  c.transform.image_size = 28;
  data::DataLoader loader(ds, c);
  loader.start_epoch(0);
  const data::Batch b = *loader.next();
  EXPECT_EQ(b.images.shape(), (Shape{100, 28, 28, 1}));
  std::vector<int64_t> idx(100);
  std::iota(idx.begin(), idx.end(), 0);
  const auto [x, y] = data::fashion_mnist_batch(data::load_fashion_mnist(data::kFashionMnistDir, "test"), idx,
                                                Device::cpu());
  // Both compute p * (1 / (255 std)) - mean / std in float with the same constants.
  EXPECT_TRUE(test::all_close(x, b.images.reshape({100, 784}), 1e-6, 1e-6, "fashion-mnist batch"));
  EXPECT_TRUE(test::bitwise_equal(y, b.labels, "labels"));
}

TEST(LoaderSynthetic, RunsWithoutFiles) {
  auto ds = std::make_shared<data::SyntheticDataset>(50, 5, 20, 30, 3, 8);
  data::LoaderConfig c;
  c.batch_size = 16;
  c.workers = 2;
  c.transform.image_size = 16;
  data::DataLoader loader(ds, c);
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  loader.start_epoch(0);
  int n = 0;
  while (std::optional<data::Batch> b = loader.next()) {
    EXPECT_EQ(b->images.shape(), (Shape{16, 16, 16, 3}));
    ++n;
  }
  EXPECT_EQ(n, 3);
}

}  // namespace
}  // namespace cnn
