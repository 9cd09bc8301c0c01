// Indexing of image folder trees and label files, the Fashion-MNIST wrapper and the synthetic source.
#include "data/dataset.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "core/file_io.h"
#include "core/philox.h"
#include "data/fashion_mnist.h"
#include "data/image_decode.h"
#include "data/transforms.h"

namespace cnn::data {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

bool hidden(const fs::path& p) { return !p.filename().empty() && p.filename().string()[0] == '.'; }

// Sorted names of the entries of `dir` that are directories (want_dirs) or image files (!want_dirs).
std::vector<std::string> list_dir(const fs::path& dir, bool want_dirs) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) throw Error(str_cat("imagenet: cannot list ", dir.string(), " (", ec.message(), ")"));
  for (; it != end; it.increment(ec)) {
    if (ec) throw Error(str_cat("imagenet: cannot list ", dir.string(), " (", ec.message(), ")"));
    const fs::path& p = it->path();
    if (hidden(p)) continue;
    std::error_code type_ec;
    const bool is_dir = it->is_directory(type_ec);
    if (want_dirs ? is_dir : (!is_dir && is_image_file_name(p.filename().string()))) {
      out.push_back(p.filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> split_ws(const std::string& line) {
  std::istringstream is(line);
  std::vector<std::string> tokens;
  for (std::string t; is >> t;) tokens.push_back(t);
  return tokens;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Lines "<wnid> <name>" (the name is the rest of the line); blank lines and '#' comments are skipped.
std::map<std::string, std::string> read_class_names(const std::string& path) {
  require_regular_file(path, "imagenet: class-name file");
  std::ifstream in(path);
  if (!in) throw Error(str_cat("imagenet: cannot open the class-name file ", path));
  std::map<std::string, std::string> name_of;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    const size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#') continue;
    const size_t end_wnid = line.find_first_of(" \t", start);
    const size_t name_at = end_wnid == std::string::npos ? end_wnid : line.find_first_not_of(" \t\r", end_wnid);
    CNN_CHECK(name_at != std::string::npos, path, ":", line_no, ": expected '<wnid> <name>', got '", line, "'");
    std::string name = line.substr(name_at);
    while (!name.empty() && (name.back() == '\r' || name.back() == ' ')) name.pop_back();
    const std::string wnid = line.substr(start, end_wnid - start);
    CNN_CHECK(name_of.emplace(wnid, name).second, path, ":", line_no, ": duplicate class '", wnid, "'");
  }
  return name_of;
}

}  // namespace

bool is_image_file_name(const std::string& name) {
  const std::string ext = lower(fs::path(name).extension().string());
  return ext == ".jpeg" || ext == ".jpg" || ext == ".png";
}

ImageFolderDataset::ImageFolderDataset(const std::string& root, const std::string& split,
                                       const ImageFolderOptions& options) {
  const fs::path split_dir = fs::path(root) / split;
  std::error_code ec;
  if (!fs::is_directory(split_dir, ec)) {
    throw Error(str_cat("imagenet: split '", split, "' not found: ", split_dir.string(),
                        fs::exists(split_dir, ec) ? " is not a directory" : " does not exist"));
  }
  const fs::path train_dir = fs::path(root) / "train";
  if (fs::is_directory(train_dir, ec)) classes_ = list_dir(train_dir, true);
  const std::vector<std::string> split_classes = list_dir(split_dir, true);
  if (classes_.empty()) classes_ = split_classes;

  std::string names_file = options.class_names_file;
  if (names_file.empty() && fs::exists(fs::path(root) / "class_names.txt", ec)) {
    names_file = (fs::path(root) / "class_names.txt").string();
  }
  const std::map<std::string, std::string> name_of =
      names_file.empty() ? std::map<std::string, std::string>{} : read_class_names(names_file);
  if (classes_.empty()) {
    for (const auto& entry : name_of) classes_.push_back(entry.first);  // a flat split without <root>/train
  }
  for (const std::string& wnid : classes_) {
    const auto it = name_of.find(wnid);
    names_.push_back(it == name_of.end() ? wnid : it->second);
  }

  if (!split_classes.empty()) {
    index_class_folders(split_dir.string());
  } else if (!list_dir(split_dir, false).empty()) {
    const std::string label_file =
        options.label_file.empty() ? (fs::path(root) / (split + "_labels.txt")).string() : options.label_file;
    index_flat(split_dir.string(), label_file);
  }
  if (paths_.empty()) {
    throw Error(str_cat("imagenet: split '", split, "' at ", split_dir.string(),
                        " holds no images (*.jpeg, *.jpg, *.png in any letter case)"));
  }
}

void ImageFolderDataset::index_class_folders(const std::string& split_dir) {
  std::unordered_map<std::string, int> class_index;
  for (size_t k = 0; k < classes_.size(); ++k) class_index[classes_[k]] = int(k);
  for (const std::string& wnid : list_dir(split_dir, true)) {
    const auto it = class_index.find(wnid);
    if (it == class_index.end()) {
      throw Error(str_cat("imagenet: ", split_dir, "/", wnid, ": class folder not among the ", classes_.size(),
                          " training classes"));
    }
    const fs::path class_dir = fs::path(split_dir) / wnid;
    for (const std::string& f : list_dir(class_dir, false)) {
      paths_.push_back((class_dir / f).string());
      labels_.push_back(it->second);
    }
  }
}

void ImageFolderDataset::index_flat(const std::string& split_dir, const std::string& label_file) {
  if (const std::string kind = file_kind(label_file); !kind.empty() && kind != "missing")
    throw Error(str_cat("imagenet: label file '", label_file, "' is ", kind, ", not a regular file"));
  std::ifstream in(label_file);
  if (!in) {
    throw Error(str_cat("imagenet: ", split_dir, " has no class folders, so it needs the label file ", label_file,
                        " (lines '<filename> <wnid or class index>'), which cannot be opened"));
  }
  CNN_CHECK(!classes_.empty(), "imagenet: ", split_dir, " is a flat split, but no class list is known: give ",
            "<root>/train or a class-name file");
  std::unordered_map<std::string, int> class_index;
  for (size_t k = 0; k < classes_.size(); ++k) class_index[classes_[k]] = int(k);
  std::map<std::string, std::pair<int, int>> label_of;  // file name -> (class, line)
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    const std::vector<std::string> t = split_ws(line);
    if (t.empty() || t[0][0] == '#') continue;
    const std::string where = str_cat(label_file, ":", line_no);
    CNN_CHECK(t.size() == 2, where, ": expected '<filename> <wnid or class index>', got '", line, "'");
    int k = -1;
    if (all_digits(t[1])) {
      k = std::stoi(t[1]);
      CNN_CHECK(k < int(classes_.size()), where, ": class index ", k, " outside [0, ", classes_.size(), ")");
    } else {
      const auto it = class_index.find(t[1]);
      CNN_CHECK(it != class_index.end(), where, ": unknown class '", t[1], "' (not among the ", classes_.size(),
                " classes)");
      k = it->second;
    }
    CNN_CHECK(label_of.emplace(t[0], std::make_pair(k, line_no)).second, where, ": duplicate entry for '", t[0], "'");
  }
  const std::vector<std::string> files = list_dir(split_dir, false);
  for (const std::string& f : files) {
    const auto it = label_of.find(f);
    CNN_CHECK(it != label_of.end(), "imagenet: ", split_dir, "/", f, ": no label in ", label_file);
    paths_.push_back((fs::path(split_dir) / f).string());
    labels_.push_back(it->second.first);
  }
  for (const auto& [name, entry] : label_of) {
    CNN_CHECK(std::binary_search(files.begin(), files.end(), name), label_file, ":", entry.second, ": '", name,
              "' is not an image file in ", split_dir);
  }
}

RawSample ImageFolderDataset::read(int64_t i) const {
  CNN_CHECK(i >= 0 && i < size(), "imagenet: sample ", i, " outside [0, ", size(), ")");
  RawSample s;
  s.encoded = read_file(paths_[size_t(i)]);
  return s;
}

FashionMnistDataset::FashionMnistDataset(const std::string& dir, const std::string& split) : split_(split) {
  FashionMnist ds = load_fashion_mnist(dir, split);
  images_ = ds.images.to_vector<uint8_t>();
  labels_ = ds.labels.to_vector<int64_t>();
}

int64_t FashionMnistDataset::size() const { return int64_t(labels_.size()); }
std::vector<float> FashionMnistDataset::mean() const { return {kFashionMnistMean}; }
std::vector<float> FashionMnistDataset::std() const { return {kFashionMnistStd}; }
std::string FashionMnistDataset::sample_name(int64_t i) const { return str_cat("fashion-mnist ", split_, "[", i, "]"); }

RawSample FashionMnistDataset::read(int64_t i) const {
  CNN_CHECK(i >= 0 && i < size(), "fashion-mnist: sample ", i, " outside [0, ", size(), ")");
  RawSample s;
  // A header over the in-memory pixels: transforms never write into their input.
  s.pixels = cv::Mat(28, 28, CV_8UC1, const_cast<uint8_t*>(images_.data() + i * 28 * 28));
  return s;
}

SyntheticDataset::SyntheticDataset(int64_t size, int num_classes, int height, int width, int channels, uint64_t seed)
    : size_(size), num_classes_(num_classes), height_(height), width_(width), channels_(channels),
      key_(derive_key(seed, kSyntheticDomain)) {
  CNN_CHECK(size >= 1, "synthetic: size must be >= 1, got ", size);
  CNN_CHECK(num_classes >= 1, "synthetic: num_classes must be >= 1, got ", num_classes);
  CNN_CHECK(height >= 1 && width >= 1 && height <= 16384 && width <= 16384, "synthetic: image size ", height, "x",
            width, " outside [1, 16384]");
  CNN_CHECK(channels == 1 || channels == 3, "synthetic: channels must be 1 or 3, got ", channels);
}

int64_t SyntheticDataset::label(int64_t i) const {
  const rng::Philox4 r = rng::philox4x32_10(rng::Philox4{{uint32_t(i), uint32_t(uint64_t(i) >> 32), ~0u, ~0u}},
                                            uint32_t(key_), uint32_t(key_ >> 32));
  return int64_t(r.v[0] % uint32_t(num_classes_));
}

std::string SyntheticDataset::sample_name(int64_t i) const { return str_cat("synthetic[", i, "]"); }

RawSample SyntheticDataset::read(int64_t i) const {
  CNN_CHECK(i >= 0 && i < size_, "synthetic: sample ", i, " outside [0, ", size_, ")");
  RawSample s;
  s.pixels.create(height_, width_, channels_ == 3 ? CV_8UC3 : CV_8UC1);
  uint8_t* p = s.pixels.data;  // freshly created: continuous
  const size_t n = size_t(height_) * size_t(width_) * size_t(channels_);
  for (size_t b = 0; b * 16 < n; ++b) {
    const rng::Philox4 r = rng::philox4x32_10(
        rng::Philox4{{uint32_t(i), uint32_t(uint64_t(i) >> 32), uint32_t(b), uint32_t(b >> 32)}}, uint32_t(key_),
        uint32_t(key_ >> 32));
    for (size_t k = 0; k < 16 && b * 16 + k < n; ++k) p[b * 16 + k] = uint8_t(r.v[k / 4] >> (8 * (k % 4)));
  }
  return s;
}

}  // namespace cnn::data
