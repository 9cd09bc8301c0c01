// Span staging (span_staging.cuh) simulated on the host: every chunk of a window is copied from where chunk_source
// says (zeros where it says -1), as the device's cp.async copies do, and every pixel's channel slice must then be found
// where the kernels read it, slot * pitch + shift(column) + lane: the tensor's value inside the map, zero outside.
// Shapes: odd and even C (SLaK's 249, 499, 998, 124, and small ones), a partial last slice, windows over the map's
// edges and past the tensor's end, FP16 and FP32 chunks. CPU suites: nvcc compiles this file for the header's host
// side, no device is needed.
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/dwconv/cuda/span_staging.cuh"

namespace cnn::dwconv {
namespace {

struct Map {
  int n, h, w, c;
};

// Stages the kRows x kCols window at (row0, col0) of image img, slice c0, of a tensor whose element i holds i + 1
// (0 marks zero fill), and checks every slot; returns how many chunks were read from the tensor.
template <class T, int kB, int kCols>
int64_t check_window(const Map& m, int img, int rows, int row0, int col0, int c0) {
  constexpr int kE = span::kChunkElems<T>, kPitch = span::kPitch<T, kB>, kChunks = kPitch / kE;
  const int64_t elems = int64_t(m.n) * m.h * m.w * m.c;
  std::vector<int64_t> slots(size_t(rows) * kCols * kPitch, -1);
  int64_t read = 0;
  for (int slot = 0; slot < rows * kCols; ++slot)
    for (int k = 0; k < kChunks; ++k) {
      const int r = slot / kCols, col = slot % kCols;
      const int64_t chunk = span::chunk_source<T>(elems, img, m.h, m.w, m.c, row0 + r, col0 + col, c0, k);
      EXPECT_TRUE(chunk == -1 || (chunk >= 0 && chunk % kE == 0 && chunk + kE <= elems)) << chunk;
      read += chunk >= 0;
      for (int e = 0; e < kE; ++e) slots[size_t(slot) * kPitch + k * kE + e] = chunk >= 0 ? chunk + e + 1 : 0;
    }
  const std::string where = "C=" + std::to_string(m.c) + " W=" + std::to_string(m.w) + " image " +
                            std::to_string(img) + " window at " + std::to_string(row0) + "," + std::to_string(col0) +
                            " c0=" + std::to_string(c0) + " chunk of " + std::to_string(kE);
  for (int r = 0; r < rows; ++r)
    for (int col = 0; col < kCols; ++col) {
      const int ih = row0 + r, iw = col0 + col;
      const bool inside = ih >= 0 && ih < m.h && iw >= 0 && iw < m.w;
      const int shift = span::shift<T>(iw, m.c);
      EXPECT_TRUE(shift >= 0 && shift < kE);
      for (int lane = 0; lane < kB && c0 + lane < m.c; ++lane) {
        const int64_t got = slots[size_t(r * kCols + col) * kPitch + shift + lane];
        const int64_t want = inside ? ((int64_t(img) * m.h + ih) * m.w + iw) * m.c + c0 + lane + 1 : 0;
        if (got != want) {  // the first wrong slot only
          ADD_FAILURE() << where << " pixel " << ih << "," << iw << " lane " << lane << ": " << got << " != " << want;
          return read;
        }
      }
    }
  return read;
}

// Every slice of windows at the map's corners and inside it, of the first and last image.
template <class T, int kB, int kCols>
void check_map(const Map& m) {
  ASSERT_TRUE(span::supports(16, m.w, m.c, sizeof(T))) << "W * C % chunk: C=" << m.c << " W=" << m.w;
  for (int img : {0, m.n - 1})
    for (int c0 = 0; c0 < m.c; c0 += kB)
      for (int row0 : {-3, 0, m.h / 2, m.h - 2})
        for (int col0 : {-2, 1, m.w - kCols + 3})
          EXPECT_GT((check_window<T, kB, kCols>(m, img, 5, row0, col0, c0)), 0);
}

TEST(SpanStaging, Fp16SlicesAtAnyChannelCount) {
  for (const Map& m : {Map{2, 8, 8, 249}, Map{2, 16, 16, 499}, Map{1, 8, 8, 998}, Map{2, 7, 8, 124}, Map{3, 5, 8, 3},
                       Map{1, 4, 24, 75}, Map{2, 6, 16, 33}})
    check_map<__half, 32, 20>(m);
  check_map<__half, 64, 12>(Map{2, 9, 8, 998});
}

TEST(SpanStaging, Fp32SlicesAtAnyChannelCount) {
  for (const Map& m : {Map{2, 8, 4, 249}, Map{2, 16, 16, 499}, Map{1, 8, 2, 998}, Map{3, 5, 4, 3}, Map{1, 6, 12, 75}})
    check_map<float, 32, 12>(m);
}

// The last pixels' slices reach past the tensor's end only in chunks that are wholly past it: those are zeros.
TEST(SpanStaging, NothingIsReadPastTheTensor) {
  const Map m{1, 2, 8, 249};  // 3984 elements, whole chunks
  EXPECT_GT((check_window<__half, 32, 10>(m, 0, 3, 0, 0, 224)), 0);
  EXPECT_EQ(span::chunk_source<__half>(int64_t(2) * 8 * 249, 0, 2, 8, 249, 1, 7, 224, 4), -1);
  EXPECT_FALSE(span::supports(16, 7, 249, 2));  // W * C % 8 != 0
  EXPECT_FALSE(span::supports(8, 8, 249, 2));   // 8-byte aligned
}

// The threads' walks (ChunkWalk) copy every chunk of a window's slots exactly once, at the block size the kernels use
// and a small one, for slots of 5, 9 and 17 chunks (FP16 32 and 64 channels, FP32 64), over windows of a step's size
// and not.
template <class T, int kB>
void check_walk(int threads, int slots) {
  constexpr int kChunks = span::ChunkWalk<T, kB>::kChunks;
  std::vector<int> copies(size_t(slots) * kChunks, 0);
  for (int tid = 0; tid < threads; ++tid) {
    const span::ChunkWalk<T, kB> walk(tid, threads);
    if (!walk.active) continue;
    ASSERT_TRUE(walk.k >= 0 && walk.k < kChunks);
    for (int slot = walk.first; slot < slots; slot += walk.step) ++copies[size_t(slot) * kChunks + walk.k];
  }
  for (size_t i = 0; i < copies.size(); ++i)
    ASSERT_EQ(copies[i], 1) << threads << " threads, " << slots << " slots of " << kChunks << " chunks: slot "
                            << i / kChunks << " chunk " << i % kChunks;
}

TEST(SpanStaging, ThreadsCopyEveryChunkOnce) {
  for (int threads : {64, 256})
    for (int slots : {1, 47, 48, 144, 720, 1000}) {
      check_walk<__half, 32>(threads, slots);
      check_walk<__half, 64>(threads, slots);
      check_walk<float, 32>(threads, slots);
      check_walk<float, 64>(threads, slots);
    }
}

}  // namespace
}  // namespace cnn::dwconv
