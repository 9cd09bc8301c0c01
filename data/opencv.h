// The OpenCV headers data/ uses (core, imgproc). OpenCV 4.6 does enum arithmetic in its inline code
// that C++20 deprecates (-Wdeprecated-enum-enum-conversion); that warning is silenced for these headers only.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-enum-enum-conversion"
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#pragma GCC diagnostic pop
