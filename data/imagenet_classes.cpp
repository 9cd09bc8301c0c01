// Parses the compiled-in class list once ("#" lines are comments; "<wnid>\t<name>" otherwise).
#include "data/imagenet_classes.h"

#include <sstream>

#include "core/error.h"

namespace cnn::data {

const std::vector<ImageNetClass>& imagenet_classes() {
  static const std::vector<ImageNetClass> classes = [] {
    std::vector<ImageNetClass> out;
    std::istringstream in{std::string(imagenet_classes_text())};
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t tab = line.find('\t');
      CNN_CHECK(tab != std::string::npos, "imagenet_classes: malformed line '", line, "'");
      out.push_back({line.substr(0, tab), line.substr(tab + 1)});
    }
    CNN_CHECK(out.size() == 1000, "imagenet_classes: expected 1000 classes, got ", out.size());
    return out;
  }();
  return classes;
}

}  // namespace cnn::data
