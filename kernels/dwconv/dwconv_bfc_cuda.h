// Internal: the backward-filter dispatcher's path description, used by dwconv_path_name (dwconv_cuda.h).
#pragma once

#include <string>

#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv {
std::string bfc_path_name(const DwconvParams& p);
}  // namespace cnn::dwconv
