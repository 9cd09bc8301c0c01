// The channel padding kernels (kernels/common/channel_pad.cu) against a host copy, bit for bit: rows shorter and
// longer than a block's span, unpadded sides at every element offset within a 16-byte line, padding of up to 7
// elements (an FP16 plan's width on a float filter gradient), and no write outside the destination.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/common/channel_pad.h"
#include "tests/support/numeric.h"

namespace cnn::kernels {
namespace {

// A device allocation of `lead` + n + kGuard elements filled with a sentinel; the data starts `lead` elements in.
template <class T>
class Guarded {
 public:
  static constexpr size_t kGuard = 16;
  Guarded(size_t n, size_t lead) : n_(n), lead_(lead), all_(lead + n + kGuard) {
    EXPECT_EQ(cudaMalloc(&base_, all_ * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemset(base_, 0xA5, all_ * sizeof(T)), cudaSuccess);
  }
  ~Guarded() { cudaFree(base_); }
  Guarded(const Guarded&) = delete;
  Guarded& operator=(const Guarded&) = delete;
  T* data() const { return base_ + lead_; }
  void upload(const std::vector<uint8_t>& bytes) const {
    ASSERT_EQ(cudaMemcpy(data(), bytes.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  // The whole allocation's bytes; the data's are at lead * sizeof(T).
  std::vector<uint8_t> download_all() const {
    std::vector<uint8_t> out(all_ * sizeof(T));
    EXPECT_EQ(cudaMemcpy(out.data(), base_, out.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  size_t n_, lead_, all_;
  T* base_ = nullptr;
};

struct PadCase {
  int64_t rows;
  int c, cp;
};

// Bytes of the padded copy `p` (rows of CP elements of e bytes) that differ from `host`'s rows of C elements followed
// by zeros.
size_t padded_bytes_wrong(const std::vector<uint8_t>& p, const std::vector<uint8_t>& host, const PadCase& k, size_t e) {
  size_t bad = 0;
  for (int64_t r = 0; r < k.rows; ++r)
    for (int ch = 0; ch < k.cp; ++ch)
      for (size_t b = 0; b < e; ++b) {
        const uint8_t want = ch < k.c ? host[(size_t(r) * k.c + ch) * e + b] : 0;
        bad += p[(size_t(r) * k.cp + ch) * e + b] != want;
      }
  return bad;
}

// Pads random rows, checks the padded copy (values, then zeros), crops it back into a guarded buffer at `lead`
// elements in and checks the rows and the untouched sentinel around them.
template <class T>
void check_round_trip(const PadCase& k, size_t lead, uint64_t seed) {
  const std::string name = "rows=" + std::to_string(k.rows) + " C=" + std::to_string(k.c) + " CP=" +
                           std::to_string(k.cp) + " lead=" + std::to_string(lead) + " " +
                           (sizeof(T) == 2 ? "f16" : "f32");
  constexpr size_t e = sizeof(T);
  const size_t n = size_t(k.rows) * k.c, np = size_t(k.rows) * k.cp;
  std::vector<uint8_t> host(n * e);
  std::mt19937_64 rng(seed);
  for (auto& b : host) b = uint8_t(rng());
  Guarded<T> src(n, lead), padded(np, 0), back(n, lead);
  src.upload(host);
  launch_pad_channels(src.data(), padded.data(), k.rows, k.c, k.cp, nullptr);
  launch_crop_channels(padded.data(), back.data(), k.rows, k.cp, k.c, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << name;

  EXPECT_EQ(padded_bytes_wrong(padded.download_all(), host, k, e), 0u) << "padded bytes wrong: " << name;

  const std::vector<uint8_t> out = back.download_all();
  size_t bad = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const bool inside = i >= lead * e && i < (lead + n) * e;
    bad += out[i] != (inside ? host[i - lead * e] : 0xA5);
  }
  EXPECT_EQ(bad, 0u) << "cropped bytes wrong or written outside the rows: " << name;
}

TEST(ChannelPadGpu, RoundTripsBitForBit) {
  CNN_REQUIRE_GPU();
  uint64_t seed = 500;
  // Spans are 8192 halves / 4096 floats: C = 9001 and 5000 rows are longer than one, C = 3 puts thousands of rows
  // in one; 0 rows is a no-op.
  for (const PadCase& k : {PadCase{1, 1, 8}, PadCase{3, 5, 8}, PadCase{1000, 13, 16}, PadCase{333, 124, 128},
                           PadCase{97, 249, 256}, PadCase{5, 1001, 1008}, PadCase{2, 9001, 9008},
                           PadCase{9000, 3, 8}, PadCase{0, 7, 8}})
    for (size_t lead : {0, 1, 3, 4, 7}) check_round_trip<__half>(k, lead, seed++);
  for (const PadCase& k : {PadCase{1000, 13, 16}, PadCase{97, 249, 252}, PadCase{50, 249, 256},
                           PadCase{3, 5000, 5004}, PadCase{7000, 1, 4}})
    for (size_t lead : {0, 1, 2, 3}) check_round_trip<float>(k, lead, seed++);
}

// One launch pads a padded plan's input, filter and bias (kernels/dwconv/cuda/dispatch.cpp): tensors of different
// rows, widths and offsets, each owning its own run of blocks; an empty tensor in the list is skipped.
TEST(ChannelPadGpu, PadsSeveralTensorsInOneLaunch) {
  CNN_REQUIRE_GPU();
  struct Part {
    PadCase k;
    size_t lead;
  };
  const Part parts[] = {{{333, 249, 256}, 3}, {{0, 249, 256}, 0}, {{245, 249, 256}, 1}, {{1, 249, 256}, 5}};
  std::mt19937_64 rng(900);
  std::vector<std::vector<uint8_t>> host;
  std::vector<std::unique_ptr<Guarded<__half>>> src, padded;
  std::vector<PadRows<__half>> rows;
  for (const Part& part : parts) {
    host.emplace_back(size_t(part.k.rows) * part.k.c * 2);
    for (auto& b : host.back()) b = uint8_t(rng());
    src.push_back(std::make_unique<Guarded<__half>>(size_t(part.k.rows) * part.k.c, part.lead));
    padded.push_back(std::make_unique<Guarded<__half>>(size_t(part.k.rows) * part.k.cp, 0));
    src.back()->upload(host.back());
    rows.push_back({src.back()->data(), padded.back()->data(), part.k.rows, part.k.c, part.k.cp});
  }
  EXPECT_THROW(launch_pad_channels<__half>({rows[0], rows[1], rows[2], rows[3]}, nullptr), cnn::Error);  // over 3
  launch_pad_channels<__half>({rows[0], rows[1], rows[2]}, nullptr);
  launch_pad_channels<__half>({rows[3]}, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (size_t i = 0; i < std::size(parts); ++i) {
    const PadCase& k = parts[i].k;
    const std::vector<uint8_t> p = padded[i]->download_all();
    size_t bad = padded_bytes_wrong(p, host[i], k, 2);
    for (size_t j = size_t(k.rows) * k.cp * 2; j < p.size(); ++j) bad += p[j] != 0xA5;  // the guard after it
    EXPECT_EQ(bad, 0u) << "tensor " << i << " of the launch";
  }
}

TEST(ChannelPadGpu, RejectsBadWidths) {
  CNN_REQUIRE_GPU();
  Guarded<float> a(64, 0), b(64, 0), odd(64, 1);
  EXPECT_THROW(launch_pad_channels(a.data(), b.data(), 4, 9, 8, nullptr), cnn::Error);    // CP < C
  EXPECT_THROW(launch_pad_channels(a.data(), b.data(), 4, 5, 6, nullptr), cnn::Error);    // CP not a multiple of 4
  EXPECT_THROW(launch_pad_channels(a.data(), odd.data(), 4, 5, 8, nullptr), cnn::Error);  // padded side unaligned
  EXPECT_THROW(launch_crop_channels(odd.data(), a.data(), 4, 8, 5, nullptr), cnn::Error);
}

}  // namespace
}  // namespace cnn::kernels
