// Image file decoding to 8-bit HWC cv::Mat (RGB or gray): JPEG through TurboJPEG with DCT-domain downscaling
// (grayscale and CMYK/YCCK JPEGs included), PNG through libpng, chosen by magic bytes (not the file
// name). Also JPEG encoding (RGB, gray, CMYK) for synthetic data sets. Errors name the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include "data/opencv.h"

namespace cnn::data {

enum class ImageFormat { jpeg, png, unknown };
// By the first bytes: FF D8 FF (JPEG), 89 'P' 'N' 'G' (PNG).
ImageFormat detect_format(const std::vector<uint8_t>& bytes);

struct ImageInfo {
  int width = 0;
  int height = 0;
  ImageFormat format = ImageFormat::unknown;
};
// Dimensions from the header only (JPEG SOF via TurboJPEG, PNG IHDR); `name` (a path) is used in errors.
ImageInfo peek_image(const std::vector<uint8_t>& bytes, const std::string& name);

// A TurboJPEG DCT scaling factor num/denom; a dimension d decodes to ceil(d * num / denom) pixels.
struct ScaleFactor {
  int num = 1;
  int denom = 1;
};
int scaled_dim(int dim, ScaleFactor s);
// The smallest TurboJPEG factor <= 1 under which a region_w x region_h region still covers at least
// min_w x min_h pixels (region * num / denom >= min, exactly); 1/1 when no smaller factor qualifies.
ScaleFactor choose_jpeg_scale(int region_w, int region_h, int min_w, int min_h);

// Largest image decode_image allocates (width x height): 2^28 pixels, 768 MiB as RGB.
constexpr int64_t kMaxImagePixels = int64_t(1) << 28;

// Decodes to `channels` (3: RGB, 1: gray) 8-bit channels. JPEGs decode at `scale` (see scaled_dim); other formats
// ignore it. Truncated or corrupt data throws cnn::Error "decode: <name>: <problem>".
cv::Mat decode_image(const std::vector<uint8_t>& bytes, int channels, ScaleFactor scale, const std::string& name);

// Reads a whole image file (regular files only: a FIFO or device is refused by type, never opened for a blocking
// read; at most kMaxImageFileBytes); errors name the path and the reason.
constexpr uint64_t kMaxImageFileBytes = 256ull << 20;
std::vector<uint8_t> read_file(const std::string& path);

enum class JpegPixels { rgb, gray, cmyk };
// Encodes a packed 8-bit image (CV_8UC3 RGB, CV_8UC1 gray or CV_8UC4 CMYK in the Adobe inverted convention, see
// docs/data.md) with 4:4:4 chroma at `quality` 1..100.
std::vector<uint8_t> encode_jpeg(const cv::Mat& pixels, JpegPixels kind, int quality);

}  // namespace cnn::data
