// Data sets as indexable sample sources: an ImageNet-style folder tree (JPEG/PNG files, class = index of the
// sorted synset folder), Fashion-MNIST (IDX, in memory) and a synthetic source (deterministic random images).
// A sample is either encoded file bytes or 8-bit HWC pixels; the loader decodes and augments it. Formats:
// docs/data.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "data/opencv.h"

namespace cnn::data {

// One raw sample: decoded 8-bit HWC pixels (in-memory sets) or, when `pixels` is empty, the encoded file bytes
// (possibly empty: an empty file is bad data).
struct RawSample {
  std::vector<uint8_t> encoded;
  cv::Mat pixels;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual int64_t label(int64_t i) const = 0;
  virtual int num_classes() const = 0;
  virtual int channels() const = 0;  // 3 (RGB) or 1 (gray)
  // Default normalization of this data set, per channel on the [0, 1] scale.
  virtual std::vector<float> mean() const = 0;
  virtual std::vector<float> std() const = 0;
  // What names sample i in messages: its path, or "<set>[i]".
  virtual std::string sample_name(int64_t i) const = 0;
  // Reads sample i; an unreadable file throws cnn::Error naming it. Safe to call from several threads.
  virtual RawSample read(int64_t i) const = 0;
};

inline const std::vector<float> kImageNetMean{0.485f, 0.456f, 0.406f};
inline const std::vector<float> kImageNetStd{0.229f, 0.224f, 0.225f};

struct ImageFolderOptions {
  // Flat splits (files directly in <root>/<split>) take labels from this file, lines "<filename> <wnid or class
  // index>"; empty means <root>/<split>_labels.txt.
  std::string label_file;
  // Optional lines "<wnid> <human readable name>"; empty means <root>/class_names.txt when that file exists.
  std::string class_names_file;
};

// <root>/<split>/<wnid>/*.{jpeg,jpg,png} (any case), or a flat <root>/<split> with a label file. The class list
// is the sorted folder names of <root>/train when it exists (so every split shares it), else of the split itself,
// else (a flat split without <root>/train) the sorted wnids of the class-name file.
// A missing or empty split, an unknown wnid, a file without a label or a malformed label line is an error naming
// the path (and line).
class ImageFolderDataset : public Dataset {
 public:
  ImageFolderDataset(const std::string& root, const std::string& split, const ImageFolderOptions& options = {});

  int64_t size() const override { return int64_t(paths_.size()); }
  int64_t label(int64_t i) const override { return labels_[size_t(i)]; }
  int num_classes() const override { return int(classes_.size()); }
  int channels() const override { return 3; }
  std::vector<float> mean() const override { return kImageNetMean; }
  std::vector<float> std() const override { return kImageNetStd; }
  std::string sample_name(int64_t i) const override { return paths_[size_t(i)]; }
  RawSample read(int64_t i) const override;

  const std::vector<std::string>& classes() const { return classes_; }  // wnids (folder names), sorted
  // Human-readable name of class k from the class-name file, or its wnid when there is none.
  const std::string& class_name(int k) const { return names_[size_t(k)]; }

 private:
  void index_class_folders(const std::string& split_dir);
  void index_flat(const std::string& split_dir, const std::string& label_file);

  std::vector<std::string> classes_, names_;
  std::vector<std::string> paths_;
  std::vector<int32_t> labels_;
};

// True for .jpeg / .jpg / .png in any letter case.
bool is_image_file_name(const std::string& name);

// Fashion-MNIST from IDX files (data/fashion_mnist.h): 28x28x1, 10 classes, mean 0.2860, std 0.3530.
class FashionMnistDataset : public Dataset {
 public:
  FashionMnistDataset(const std::string& dir, const std::string& split);  // split: "train" or "test"
  int64_t size() const override;
  int64_t label(int64_t i) const override { return labels_[size_t(i)]; }
  int num_classes() const override { return 10; }
  int channels() const override { return 1; }
  std::vector<float> mean() const override;
  std::vector<float> std() const override;
  std::string sample_name(int64_t i) const override;
  RawSample read(int64_t i) const override;

 private:
  std::string split_;
  std::vector<uint8_t> images_;  // (N, 28, 28)
  std::vector<int64_t> labels_;
};

// Deterministic random images: sample i is height x width x channels of Philox noise under (seed, i), label
// i's hash mod num_classes. For benchmarks and tests that need no files.
class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(int64_t size, int num_classes, int height, int width, int channels, uint64_t seed);
  int64_t size() const override { return size_; }
  int64_t label(int64_t i) const override;
  int num_classes() const override { return num_classes_; }
  int channels() const override { return channels_; }
  std::vector<float> mean() const override { return std::vector<float>(size_t(channels_), 0.5f); }
  std::vector<float> std() const override { return std::vector<float>(size_t(channels_), 0.289f); }  // U(0,1)
  std::string sample_name(int64_t i) const override;
  RawSample read(int64_t i) const override;

 private:
  int64_t size_;
  int num_classes_, height_, width_, channels_;
  uint64_t key_;
};

// The first `n` samples of another data set (--train-samples, --samples); the caller checks n <= its size.
class SubsetDataset : public Dataset {
 public:
  SubsetDataset(std::shared_ptr<const Dataset> base, int64_t n) : base_(std::move(base)), n_(n) {}
  int64_t size() const override { return n_; }
  int64_t label(int64_t i) const override { return base_->label(i); }
  int num_classes() const override { return base_->num_classes(); }
  int channels() const override { return base_->channels(); }
  std::vector<float> mean() const override { return base_->mean(); }
  std::vector<float> std() const override { return base_->std(); }
  std::string sample_name(int64_t i) const override { return base_->sample_name(i); }
  RawSample read(int64_t i) const override { return base_->read(i); }

 private:
  std::shared_ptr<const Dataset> base_;
  int64_t n_;
};

}  // namespace cnn::data
