// TurboJPEG (2.1 API: tjDecompressHeader3 / tjDecompress2 / tjCompress2) and OpenCV imdecode behind one decode
// entry point. TurboJPEG handles are per thread (they are not thread-safe and cheap to keep).
#include "data/image_decode.h"

#include <fcntl.h>
#include <png.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/file_io.h"
#include "data/opencv.h"

namespace cnn::data {

namespace {

struct TjHandle {
  tjhandle h = nullptr;
  ~TjHandle() {
    if (h != nullptr) tjDestroy(h);
  }
};

TjHandle& decompressor_slot() {
  thread_local TjHandle t;
  return t;
}

tjhandle decompressor() {
  TjHandle& t = decompressor_slot();
  if (t.h == nullptr) t.h = tjInitDecompress();
  CNN_CHECK(t.h != nullptr, "decode: tjInitDecompress failed: ", tjGetErrorStr2(nullptr));
  return t.h;
}

// TurboJPEG 2.1 leaves a decompressor mid-header after a failed tjDecompressHeader3 (the next call then reads
// garbage such as a 0x0 size), so a handle that reported an error is replaced. Returns the error text.
std::string take_decompressor_error() {
  TjHandle& t = decompressor_slot();
  const std::string msg = tjGetErrorStr2(t.h);
  tjDestroy(t.h);
  t.h = nullptr;
  return msg;
}

tjhandle compressor() {
  thread_local TjHandle t{tjInitCompress()};
  CNN_CHECK(t.h != nullptr, "encode_jpeg: tjInitCompress failed: ", tjGetErrorStr2(nullptr));
  return t.h;
}

[[noreturn]] void fail(const std::string& name, const std::string& problem) {
  throw Error(str_cat("decode: ", name, ": ", problem));
}

struct JpegHeader {
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
};

JpegHeader read_jpeg_header(const std::vector<uint8_t>& bytes, const std::string& name) {
  JpegHeader hd;
  if (tjDecompressHeader3(decompressor(), bytes.data(), static_cast<unsigned long>(bytes.size()), &hd.width,
                          &hd.height, &hd.subsamp, &hd.colorspace) != 0) {
    fail(name, str_cat("bad JPEG header (", take_decompressor_error(), ")"));
  }
  // libjpeg reports a stream that ends before its frame header as an empty image, not as an error.
  if (hd.width <= 0 || hd.height <= 0)
    fail(name, str_cat("truncated JPEG: the file's ", bytes.size(), " bytes end before the frame header"));
  return hd;
}

// libjpeg recovers from a truncated stream by padding it with gray and only warns; a training set must not learn
// from such half-gray images, so truncation warnings are errors. Other warnings (e.g. extraneous bytes before a
// marker, which some ImageNet files have) leave a correct image and are accepted. A baseline file that lacks only
// its end-of-image marker is decoded with one appended (see with_end_marker), so it decodes without a warning.
void check_tj_result(int rc, const std::string& name) {
  if (rc == 0) return;
  const bool fatal = tjGetErrorCode(decompressor()) == TJERR_FATAL;
  const std::string msg = take_decompressor_error();
  const bool truncated = msg.find("remature end") != std::string::npos;
  if (fatal || truncated) fail(name, str_cat("corrupt JPEG data (", msg, ")"));
}

bool is_supported_scale(ScaleFactor s) {
  int n = 0;
  const tjscalingfactor* f = tjGetScalingFactors(&n);
  for (int i = 0; i < n; ++i) {
    if (f[i].num == s.num && f[i].denom == s.denom) return true;
  }
  return false;
}

// Adobe CMYK JPEGs store inverted ink amounts (255 = no ink), so R = C * K / 255 with the stored values.
cv::Mat cmyk_to_rgb(const cv::Mat& cmyk) {
  cv::Mat rgb(cmyk.rows, cmyk.cols, CV_8UC3);
  for (int y = 0; y < cmyk.rows; ++y) {
    const uint8_t* s = cmyk.ptr<uint8_t>(y);
    uint8_t* d = rgb.ptr<uint8_t>(y);
    for (int x = 0; x < cmyk.cols; ++x, s += 4, d += 3) {
      const int k = s[3];
      for (int c = 0; c < 3; ++c) d[c] = uint8_t((s[c] * k + 127) / 255);
    }
  }
  return rgb;
}

// The decoded image is allocated from the header's size: a header that claims more than the limit is refused before.
void check_pixel_count(int64_t width, int64_t height, const std::string& name) {
  if (width * height > kMaxImagePixels)
    fail(name, str_cat("JPEG size ", width, "x", height, " exceeds the ", kMaxImagePixels, "-pixel limit"));
}

// Walks the marker segments after SOI while each starts with 0xFF: visit(marker, at, next) gets the segment's marker,
// its offset and the offset just past its length field's extent, and returns where the walk goes on (kStop ends it).
constexpr size_t kStop = size_t(-1);
template <class Visit>
void walk_segments(const std::vector<uint8_t>& b, Visit visit) {
  size_t at = 2;  // after SOI
  while (at + 4 <= b.size() && b[at] == 0xFF) {
    at = visit(b[at + 1], at, at + 2 + (size_t(b[at + 2]) << 8 | b[at + 3]));
    if (at == kStop) return;
  }
}

// True when the frame header (SOF) before the first scan is progressive (SOF2, SOF6, SOF10, SOF14).
bool is_progressive_jpeg(const std::vector<uint8_t>& b) {
  bool progressive = false;
  walk_segments(b, [&](uint8_t marker, size_t, size_t next) {
    if (marker == 0xDA) return kStop;  // SOS: no progressive frame header before the scan
    progressive = marker == 0xC2 || marker == 0xC6 || marker == 0xCA || marker == 0xCE;
    return progressive ? kStop : next;
  });
  return progressive;
}

// libjpeg decodes a scan whose data is cut short by a foreign marker (a second SOF, an SOI) as gray padding without
// a warning, so the markers are walked first: each scan's entropy-coded data must be non-empty and end at EOI, a
// restart, a table, a comment or the next scan. Data running to the end of the file is left to the decoder.
void check_scan_markers(const std::vector<uint8_t>& b, const std::string& name) {
  walk_segments(b, [&](uint8_t marker, size_t, size_t next) {
    if (marker == 0xD9) return kStop;
    if (marker != 0xDA) return next;
    size_t at = next;
    while (at + 1 < b.size()) {
      if (b[at] == 0xFF && b[at + 1] == 0xFF) {
        ++at;  // fill byte before a marker
        continue;
      }
      if (b[at] == 0xFF && b[at + 1] != 0x00 && (b[at + 1] < 0xD0 || b[at + 1] > 0xD7)) break;
      ++at;
    }
    if (at + 1 >= b.size()) return kStop;
    const uint8_t following = b[at + 1];
    const bool allowed = following == 0xD9 || following == 0xDA || following == 0xC4 || following == 0xDB ||
                         following == 0xDD || following == 0xFE || (following >= 0xE0 && following <= 0xEF);
    if (at == next || !allowed)
      fail(name, str_cat("corrupt JPEG data (marker 0x", std::hex, int(following), std::dec, " after ", at - next,
                         " bytes of scan data)"));
    return at;
  });
}

// A baseline JPEG whose data ends without the end-of-image marker (FF D9) gets one appended: complete scan data
// then decodes cleanly, and truncated scan data still warns (the decoder meets the marker while it needs bits).
// A progressive file is left as it is: one cut between scans would decode to a blurred image without a warning.
const std::vector<uint8_t>& with_end_marker(const std::vector<uint8_t>& bytes, std::vector<uint8_t>& storage) {
  const size_t n = bytes.size();
  if (n >= 2 && bytes[n - 2] == 0xFF && bytes[n - 1] == 0xD9) return bytes;
  if (is_progressive_jpeg(bytes)) return bytes;
  storage.reserve(n + 2);
  storage.assign(bytes.begin(), bytes.end());
  storage.push_back(0xFF);
  storage.push_back(0xD9);
  return storage;
}

cv::Mat decode_jpeg(const std::vector<uint8_t>& file_bytes, int channels, ScaleFactor scale, const std::string& name) {
  std::vector<uint8_t> storage;
  const std::vector<uint8_t>& bytes = with_end_marker(file_bytes, storage);
  CNN_CHECK(is_supported_scale(scale), "decode: ", name, ": ", scale.num, "/", scale.denom,
            " is not a TurboJPEG scaling factor");
  const JpegHeader hd = read_jpeg_header(file_bytes, name);
  check_pixel_count(hd.width, hd.height, name);
  check_scan_markers(file_bytes, name);
  const int w = scaled_dim(hd.width, scale), h = scaled_dim(hd.height, scale);
  const auto size = static_cast<unsigned long>(bytes.size());
  if (hd.colorspace == TJCS_CMYK || hd.colorspace == TJCS_YCCK) {
    cv::Mat cmyk(h, w, CV_8UC4);
    check_tj_result(tjDecompress2(decompressor(), bytes.data(), size, cmyk.data, w, int(cmyk.step), h, TJPF_CMYK, 0),
                    name);
    cv::Mat rgb = cmyk_to_rgb(cmyk);
    if (channels == 3) return rgb;
    cv::Mat gray;
    cv::cvtColor(rgb, gray, cv::COLOR_RGB2GRAY);
    return gray;
  }
  // TJPF_RGB expands grayscale JPEGs; TJPF_GRAY takes the luma of color ones.
  cv::Mat out(h, w, channels == 3 ? CV_8UC3 : CV_8UC1);
  check_tj_result(tjDecompress2(decompressor(), bytes.data(), size, out.data, w, int(out.step), h,
                                channels == 3 ? TJPF_RGB : TJPF_GRAY, 0),
                  name);
  return out;
}

// libpng's simplified API: converts any PNG (palette, 16-bit, alpha, gray) to 8-bit RGB or gray.
cv::Mat decode_png(const std::vector<uint8_t>& bytes, int channels, const std::string& name) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    fail(name, str_cat("corrupt PNG data (", image.message, ")"));
  if (int64_t(image.width) * int64_t(image.height) > kMaxImagePixels) {
    png_image_free(&image);
    fail(name, str_cat("PNG size ", image.width, "x", image.height, " exceeds the ", kMaxImagePixels, "-pixel limit"));
  }
  image.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  cv::Mat out(int(image.height), int(image.width), channels == 3 ? CV_8UC3 : CV_8UC1);
  if (!png_image_finish_read(&image, nullptr, out.data, static_cast<png_int_32>(out.step), nullptr)) {
    const std::string message = image.message;
    png_image_free(&image);
    fail(name, str_cat("corrupt PNG data (", message, ")"));
  }
  return out;
}

}  // namespace

ImageFormat detect_format(const std::vector<uint8_t>& b) {
  if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return ImageFormat::jpeg;
  if (b.size() >= 8 && b[0] == 0x89 && b[1] == 'P' && b[2] == 'N' && b[3] == 'G') return ImageFormat::png;
  return ImageFormat::unknown;
}

ImageInfo peek_image(const std::vector<uint8_t>& bytes, const std::string& name) {
  ImageInfo info;
  info.format = detect_format(bytes);
  if (info.format == ImageFormat::jpeg) {
    const JpegHeader hd = read_jpeg_header(bytes, name);
    info.width = hd.width;
    info.height = hd.height;
  } else if (info.format == ImageFormat::png) {
    // 8-byte signature, then the IHDR chunk: length (4), "IHDR", width (4, big-endian), height (4).
    if (bytes.size() < 24 || std::memcmp(bytes.data() + 12, "IHDR", 4) != 0) fail(name, "PNG without an IHDR chunk");
    auto be32 = [&](size_t at) {
      return int64_t(bytes[at]) << 24 | int64_t(bytes[at + 1]) << 16 | int64_t(bytes[at + 2]) << 8 | bytes[at + 3];
    };
    const int64_t w = be32(16), h = be32(20);
    if (w < 1 || h < 1 || w > (1 << 20) || h > (1 << 20)) fail(name, str_cat("PNG size ", w, "x", h));
    info.width = int(w);
    info.height = int(h);
  } else {
    if (bytes.empty()) fail(name, "empty file");
    std::string magic;
    for (size_t i = 0; i < std::min<size_t>(4, bytes.size()); ++i) magic += str_cat(i ? " " : "", int(bytes[i]));
    fail(name, str_cat("neither JPEG nor PNG (first bytes ", magic, ")"));
  }
  return info;
}

int scaled_dim(int dim, ScaleFactor s) { return (dim * s.num + s.denom - 1) / s.denom; }

ScaleFactor choose_jpeg_scale(int region_w, int region_h, int min_w, int min_h) {
  int n = 0;
  const tjscalingfactor* f = tjGetScalingFactors(&n);
  ScaleFactor best;
  for (int i = 0; i < n; ++i) {
    if (f[i].num > f[i].denom) continue;  // upscaling factors
    const bool covers = int64_t(region_w) * f[i].num >= int64_t(min_w) * f[i].denom &&
                        int64_t(region_h) * f[i].num >= int64_t(min_h) * f[i].denom;
    if (covers && int64_t(f[i].num) * best.denom < int64_t(best.num) * f[i].denom) best = {f[i].num, f[i].denom};
  }
  return best;
}

cv::Mat decode_image(const std::vector<uint8_t>& bytes, int channels, ScaleFactor scale, const std::string& name) {
  CNN_CHECK(channels == 1 || channels == 3, "decode: ", name, ": channels must be 1 or 3, got ", channels);
  switch (detect_format(bytes)) {
    case ImageFormat::jpeg:
      return decode_jpeg(bytes, channels, scale, name);
    case ImageFormat::png:
      return decode_png(bytes, channels, name);
    case ImageFormat::unknown:
      break;
  }
  peek_image(bytes, name);  // throws the "neither JPEG nor PNG" error
  fail(name, "unknown format");
}

std::vector<uint8_t> read_file(const std::string& path) {
  return read_regular_file(path, "read", kMaxImageFileBytes);
}

std::vector<uint8_t> encode_jpeg(const cv::Mat& pixels, JpegPixels kind, int quality) {
  const int want_type = kind == JpegPixels::rgb ? CV_8UC3 : (kind == JpegPixels::gray ? CV_8UC1 : CV_8UC4);
  CNN_CHECK(pixels.type() == want_type && !pixels.empty(), "encode_jpeg: expected a non-empty ",
            cv::typeToString(want_type), " image, got ", cv::typeToString(pixels.type()), " ", pixels.cols, "x",
            pixels.rows);
  CNN_CHECK(quality >= 1 && quality <= 100, "encode_jpeg: quality must be in [1, 100], got ", quality);
  const int pf = kind == JpegPixels::rgb ? TJPF_RGB : (kind == JpegPixels::gray ? TJPF_GRAY : TJPF_CMYK);
  const int subsamp = kind == JpegPixels::gray ? TJSAMP_GRAY : TJSAMP_444;
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(compressor(), pixels.data, pixels.cols, int(pixels.step), pixels.rows, pf, &buf, &size,
                             subsamp, quality, 0);
  if (rc != 0) {
    tjFree(buf);
    throw Error(str_cat("encode_jpeg: tjCompress2 failed: ", tjGetErrorStr2(compressor())));
  }
  std::vector<uint8_t> out(buf, buf + size);
  tjFree(buf);
  return out;
}

}  // namespace cnn::data
