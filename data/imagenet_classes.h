// ImageNet-1k class names in class-index order (the sorted WordNet ids of the ILSVRC-2012 classes), compiled in
// from data/imagenet_classes.txt, whose header notes their source.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cnn::data {

struct ImageNetClass {
  std::string wnid;  // "n01440764"
  std::string name;  // "tench, Tinca tinca"
};

// The 1000 classes; index k is class k of an ImageNet-1k classifier.
const std::vector<ImageNetClass>& imagenet_classes();

// The text of data/imagenet_classes.txt (generated source).
std::string_view imagenet_classes_text();

}  // namespace cnn::data
