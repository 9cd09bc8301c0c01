// Data set indexing: ImageNet-style class folders (sorted classes, extensions in any case), flat splits with a
// label file (wnid or index labels), class names, every error path; Fashion-MNIST and the synthetic source.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "data/dataset.h"
#include "data/fashion_mnist.h"
#include "data/image_decode.h"
#include "tests/data/jpeg_tree.h"

namespace cnn {
namespace {

namespace fs = std::filesystem;

class Dataset : public test::ScratchDir {
 protected:
  void image(const std::string& rel, int id = 0) {
    test::write_bytes(dir_ / rel, data::encode_jpeg(test::id_image(id, 8, 8), data::JpegPixels::rgb, 90));
  }
  void text(const std::string& rel, const std::string& content) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << content;
  }
  std::string error_of(const std::string& split, const data::ImageFolderOptions& o = {}) {
    try {
      data::ImageFolderDataset ds(dir_.string(), split, o);
    } catch (const Error& e) {
      return e.what();
    }
    return "<no error>";
  }
};

TEST_F(Dataset, ClassFoldersSortedAndExtensionsAnyCase) {
  image("train/n03/a.JPEG");
  image("train/n01/b.jpg");
  image("train/n01/a.Png");
  image("train/n02/c.jpeg");
  text("train/n02/notes.txt", "not an image");
  image("train/n02/.hidden.JPEG");
  data::ImageFolderDataset ds(dir_.string(), "train");
  EXPECT_EQ(ds.classes(), (std::vector<std::string>{"n01", "n02", "n03"}));
  ASSERT_EQ(ds.size(), 4);
  EXPECT_EQ(fs::path(ds.sample_name(0)).filename(), "a.Png");
  EXPECT_EQ(fs::path(ds.sample_name(1)).filename(), "b.jpg");
  const std::vector<int64_t> labels{ds.label(0), ds.label(1), ds.label(2), ds.label(3)};
  EXPECT_EQ(labels, (std::vector<int64_t>{0, 0, 1, 2}));
  EXPECT_EQ(ds.class_name(2), "n03");  // no class-name file: the wnid
  EXPECT_FALSE(ds.read(0).encoded.empty());
}

TEST_F(Dataset, ValWithSynsetFoldersUsesTrainClasses) {
  image("train/n01/a.JPEG");
  image("train/n02/a.JPEG");
  image("train/n03/a.JPEG");
  image("val/n03/v.JPEG");
  data::ImageFolderDataset val(dir_.string(), "val");
  EXPECT_EQ(val.num_classes(), 3);
  EXPECT_EQ(val.label(0), 2);
  image("val/n09/w.JPEG");
  EXPECT_NE(error_of("val").find("n09"), std::string::npos);
}

TEST_F(Dataset, FlatValWithLabelFile) {
  image("train/n01/a.JPEG");
  image("train/n02/a.JPEG");
  image("val/ILSVRC2012_val_00000002.JPEG");
  image("val/ILSVRC2012_val_00000001.JPEG");
  text("val_labels.txt", "# filename label\nILSVRC2012_val_00000001.JPEG n02\n\nILSVRC2012_val_00000002.JPEG 0\n");
  text("class_names.txt", "n01 tench, Tinca tinca\nn02 goldfish\nn99 unused\n");
  data::ImageFolderDataset val(dir_.string(), "val");
  ASSERT_EQ(val.size(), 2);
  EXPECT_EQ(fs::path(val.sample_name(0)).filename(), "ILSVRC2012_val_00000001.JPEG");
  EXPECT_EQ(val.label(0), 1);
  EXPECT_EQ(val.label(1), 0);
  EXPECT_EQ(val.class_name(0), "tench, Tinca tinca");
  EXPECT_EQ(val.class_name(1), "goldfish");
}

TEST_F(Dataset, FlatSplitWithoutTrainTakesClassesFromNamesFile) {
  image("val/x.JPEG");
  text("labels.txt", "x.JPEG n02\n");
  text("names.txt", "n02 goldfish\nn01 tench\n");
  data::ImageFolderOptions o;
  o.label_file = (dir_ / "labels.txt").string();
  o.class_names_file = (dir_ / "names.txt").string();
  data::ImageFolderDataset val(dir_.string(), "val", o);
  EXPECT_EQ(val.classes(), (std::vector<std::string>{"n01", "n02"}));
  EXPECT_EQ(val.label(0), 1);
}

TEST_F(Dataset, LabelFileErrorsNameFileAndLine) {
  image("train/n01/a.JPEG");
  image("val/a.JPEG");
  EXPECT_NE(error_of("val").find("val_labels.txt"), std::string::npos);
  text("val_labels.txt", "a.JPEG n07\n");
  const std::string unknown = error_of("val");
  EXPECT_NE(unknown.find("val_labels.txt:1"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("n07"), std::string::npos) << unknown;
  text("val_labels.txt", "a.JPEG\n");
  EXPECT_NE(error_of("val").find("val_labels.txt:1: expected"), std::string::npos);
  text("val_labels.txt", "a.JPEG 5\n");
  EXPECT_NE(error_of("val").find("class index 5"), std::string::npos);
  text("val_labels.txt", "a.JPEG 0\nb.JPEG 0\n");
  EXPECT_NE(error_of("val").find("val_labels.txt:2: 'b.JPEG'"), std::string::npos) << error_of("val");
  text("val_labels.txt", "a.JPEG 0\na.JPEG 0\n");
  EXPECT_NE(error_of("val").find("duplicate"), std::string::npos);
  image("val/c.JPEG");
  text("val_labels.txt", "a.JPEG 0\n");
  EXPECT_NE(error_of("val").find("c.JPEG: no label"), std::string::npos) << error_of("val");
}

TEST_F(Dataset, MissingAndEmptySplitsAreErrors) {
  const std::string missing = error_of("train");
  EXPECT_NE(missing.find("split 'train'"), std::string::npos) << missing;
  EXPECT_NE(missing.find((dir_ / "train").string()), std::string::npos) << missing;
  EXPECT_NE(missing.find("does not exist"), std::string::npos) << missing;
  fs::create_directories(dir_ / "val");
  const std::string empty = error_of("val");
  EXPECT_NE(empty.find("split 'val'"), std::string::npos) << empty;
  EXPECT_NE(empty.find("holds no images"), std::string::npos) << empty;
  fs::create_directories(dir_ / "train/n01");  // class folders, but no files
  EXPECT_NE(error_of("train").find("holds no images"), std::string::npos);
}

TEST_F(Dataset, ClassNamesFileErrors) {
  image("train/n01/a.JPEG");
  text("class_names.txt", "n01\n");
  EXPECT_NE(error_of("train").find("class_names.txt:1"), std::string::npos);
  text("class_names.txt", "n01 a\nn01 b\n");
  EXPECT_NE(error_of("train").find("duplicate class 'n01'"), std::string::npos);
}

TEST(FashionMnistDataset, WrapsTheIdxFiles) {
  if (!fs::exists(std::string(data::kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST not installed at " << data::kFashionMnistDir;
  }
  data::FashionMnistDataset ds(data::kFashionMnistDir, "test");
  const data::FashionMnist raw = data::load_fashion_mnist(data::kFashionMnistDir, "test");
  ASSERT_EQ(ds.size(), 10000);
  EXPECT_EQ(ds.channels(), 1);
  EXPECT_EQ(ds.mean(), std::vector<float>{data::kFashionMnistMean});
  const data::RawSample s = ds.read(1234);
  ASSERT_EQ(s.pixels.rows, 28);
  EXPECT_EQ(std::memcmp(s.pixels.data, raw.images.data<uint8_t>() + 1234 * 784, 784), 0);
  EXPECT_EQ(ds.label(1234), raw.labels.data<int64_t>()[1234]);
}

TEST(SyntheticDataset, Deterministic) {
  data::SyntheticDataset a(100, 7, 5, 6, 3, 11), b(100, 7, 5, 6, 3, 11), c(100, 7, 5, 6, 3, 12);
  EXPECT_EQ(a.read(17).pixels.total(), 30u);
  EXPECT_EQ(cv::norm(a.read(17).pixels, b.read(17).pixels, cv::NORM_INF), 0.0);
  EXPECT_GT(cv::norm(a.read(17).pixels, c.read(17).pixels, cv::NORM_INF), 0.0);
  EXPECT_GT(cv::norm(a.read(17).pixels, a.read(18).pixels, cv::NORM_INF), 0.0);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(a.label(i), b.label(i));
    ++counts[size_t(a.label(i))];
  }
  for (int k = 0; k < 7; ++k) EXPECT_GT(counts[size_t(k)], 0) << "class " << k;
  EXPECT_THROW(data::SyntheticDataset(0, 7, 5, 6, 3, 1), Error);
}

}  // namespace
}  // namespace cnn
