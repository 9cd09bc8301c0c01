// Channel padding (channel_pad.h): rows of C values copied into rows of CP >= C values with zeros after them, and
// back. The padded side's rows start 16-byte aligned (CP is a multiple of the vector width); the unpadded side may
// start anywhere a T may, so its rows are only T-aligned at an odd C.
//
// Both sides are moved in 16-byte accesses. Block b owns the unpadded elements [b E, (b+1) E) (E = 16 KB of T),
// a contiguous span on both sides, and stages it in shared memory laid out like global memory (element i of the span
// at m + i, m = the span start's offset in its 16-byte line), so the unpadded side is read or written in whole aligned
// lines; only lines the span or the tensor cuts are done element by element. The padded side is one vector per thread
// job, gathered from or scattered to the staged span. (One vector per thread with element loads and stores on the
// unpadded side ran at 1.4 TB/s on the H200.)
#include <cstdint>
#include <type_traits>

#include "kernels/common/channel_pad.h"

#include "core/cuda_check.h"
#include "kernels/common/grid_dependency.cuh"

namespace cnn::kernels {

namespace {

constexpr int kThreads = 256;
constexpr int kSpanBytes = 16384;

template <class T>
constexpr int kVec = 16 / int(sizeof(T));  // elements per 16-byte vector
template <class T>
constexpr int kSpan = kSpanBytes / int(sizeof(T));  // E

template <class T>
struct alignas(16) Vec {
  T v[kVec<T>];
};

// The staging buffer: the span, one vector beyond it (a pad job's vector may end past the span), the line offset.
template <class T>
struct Staged {
  static constexpr int kLines = (kSpanBytes + 16 + 16) / 16 + 1;
  uint4 lines[kLines];
  __device__ T* elems() { return reinterpret_cast<T*>(lines); }
};

// Lines a thread moves at most: a span of kSpanBytes plus the vector staged past it, over kThreads threads.
constexpr int kLinesPerThread = (kSpanBytes / 16 + 2 + kThreads - 1) / kThreads;

// Elements of the global range [g0, g1) (g0 at offset m of its line in `s`) to or from shared memory: whole lines
// that lie inside [lo, hi) as one 16-byte access, the rest element by element. G = const T: load; G = T: store.
// A load issues all of a thread's whole lines before it stages them: one line at a time leaves each thread waiting on
// one DRAM round trip after another.
template <class G, class T>
__device__ void move_lines(G* g, T* s, int64_t g0, int64_t g1, int64_t lo, int64_t hi, int m) {
  constexpr bool kLoad = std::is_const_v<G>;
  const int64_t first = g0 - m;  // global index of the first line's first element
  const int lines = int((g1 - first + kVec<T> - 1) / kVec<T>);
  auto whole = [&](int64_t e0) { return e0 >= lo && e0 + kVec<T> <= hi; };
  if constexpr (kLoad) {
    uint4 held[kLinesPerThread];
#pragma unroll
    for (int u = 0; u < kLinesPerThread; ++u) {
      const int q = threadIdx.x + u * kThreads;
      const int64_t e0 = first + int64_t(q) * kVec<T>;
      if (q < lines && whole(e0)) held[u] = __ldg(reinterpret_cast<const uint4*>(g + e0));
    }
#pragma unroll
    for (int u = 0; u < kLinesPerThread; ++u) {
      const int q = threadIdx.x + u * kThreads;
      const int64_t e0 = first + int64_t(q) * kVec<T>;
      if (q < lines && whole(e0)) *reinterpret_cast<uint4*>(s + q * kVec<T>) = held[u];
    }
  }
  for (int q = threadIdx.x; q < lines; q += blockDim.x) {
    const int64_t e0 = first + int64_t(q) * kVec<T>;
    if (whole(e0)) {
      if constexpr (!kLoad) __stcs(reinterpret_cast<uint4*>(g + e0), *reinterpret_cast<const uint4*>(s + q * kVec<T>));
      continue;
    }
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) {
      const int64_t e = e0 + k;
      if (e < lo || e >= hi) continue;
      if constexpr (kLoad)
        s[q * kVec<T> + k] = g[e];
      else
        g[e] = s[q * kVec<T> + k];
    }
  }
}

// The first padded vector that starts at unpadded element s or later: vectors cover each row's CP elements in order,
// those starting at C or beyond hold only zeros (CP - C can reach a vector when a float filter gradient is cropped
// from an FP16 plan's width).
template <class T>
__device__ int64_t first_vector_from(int64_t s, int c, int per_row) {
  const int64_t row = s / c;
  return row * per_row + (int(s - row * c) + kVec<T> - 1) / kVec<T>;
}

// Block b's span of the unpadded side (`side`: elements [s0, s1), element s0 at staged index m) and its padded-vector
// jobs v0 .. v1-1: job j is vector v0 + j, whose element 0 is staged at at(j) and which is column c0(j) of its row.
template <class T>
struct SpanJobs {
  int64_t s0, s1, v0;
  int m, jobs, lv0, base, c, per_row;
  // Span `block` of the tensor. from_holder: the span's first vector is the one holding s0 (crop), else the first
  // starting in the span (pad).
  __device__ SpanJobs(const T* side, int64_t total, int c_, int cp, bool from_holder, int block)
      : c(c_), per_row(cp / kVec<T>) {
    s0 = int64_t(block) * kSpan<T>;
    s1 = min(total, s0 + kSpan<T>);
    const int64_t row_s0 = s0 / c;
    v0 = from_holder ? row_s0 * per_row + int(s0 - row_s0 * c) / kVec<T> : first_vector_from<T>(s0, c, per_row);
    m = int((reinterpret_cast<uintptr_t>(side + s0) % 16) / sizeof(T));
    const int64_t row0 = v0 / per_row;
    base = int(row0 * c - s0) + m;  // staged index of row row0's element 0 (may be negative)
    jobs = int(first_vector_from<T>(s1, c, per_row) - v0);
    lv0 = int(v0 - row0 * per_row);
  }
  __device__ void job(int j, int& at, int& c0) const {
    const int lv = lv0 + j, r = lv / per_row;
    c0 = (lv - r * per_row) * kVec<T>;
    at = base + r * c + c0;
  }
};

// The tensors of one padding launch: tensor k owns blocks [first_block[k], first_block[k + 1]).
template <class T>
struct PadLaunch {
  PadRows<T> tensors[kMaxPadTensors];
  int first_block[kMaxPadTensors];
  int count;
};

template <class T>
__global__ void __launch_bounds__(kThreads) pad_channels_kernel(const PadLaunch<T> l) {
  // Once every block has got here, the kernel launched early behind this one may start (grid_dependency.cuh).
  cuda::allow_dependent_launch();
  __shared__ Staged<T> staged;
  T* const s = staged.elems();
  PadRows<T> t = l.tensors[0];
  int first = 0;
#pragma unroll
  for (int k = 1; k < kMaxPadTensors; ++k)
    if (k < l.count && int(blockIdx.x) >= l.first_block[k]) t = l.tensors[k], first = l.first_block[k];
  const int64_t total = t.rows * t.c;
  const SpanJobs<T> sj(t.src, total, t.c, t.cp, false, int(blockIdx.x) - first);
  // The owned vectors read up to one vector past the span: stage that much too.
  move_lines(t.src, s, sj.s0, min(total, sj.s1 + kVec<T>), 0, total, sj.m);
  __syncthreads();
  for (int j = threadIdx.x; j < sj.jobs; j += blockDim.x) {
    int at, c0;
    sj.job(j, at, c0);
    Vec<T> out;
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) out.v[k] = c0 + k < t.c ? s[at + k] : T(0.0f);
    reinterpret_cast<Vec<T>*>(t.dst)[sj.v0 + j] = out;
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) crop_channels_kernel(const T* __restrict__ src, T* __restrict__ dst,
                                                                 int64_t total, int cp, int c) {
  __shared__ Staged<T> staged;
  T* const s = staged.elems();
  const SpanJobs<T> sj(dst, total, c, cp, true, blockIdx.x);
  const int lo = sj.m, hi = sj.m + int(sj.s1 - sj.s0);  // the span's staged indices
  // A thread loads kLinesPerThread of its padded vectors before it stages them (loads in flight, as in move_lines);
  // a narrow C has more vectors than one such round.
  for (int j0 = 0; j0 < sj.jobs; j0 += kLinesPerThread * kThreads) {
    Vec<T> in[kLinesPerThread];
#pragma unroll
    for (int u = 0; u < kLinesPerThread; ++u) {
      const int j = j0 + threadIdx.x + u * kThreads;
      if (j < sj.jobs) in[u] = reinterpret_cast<const Vec<T>*>(src)[sj.v0 + j];
    }
#pragma unroll
    for (int u = 0; u < kLinesPerThread; ++u) {
      const int j = j0 + threadIdx.x + u * kThreads;
      if (j >= sj.jobs) continue;
      int at, c0;
      sj.job(j, at, c0);
#pragma unroll
      for (int k = 0; k < kVec<T>; ++k)
        if (c0 + k < c && at + k >= lo && at + k < hi) s[at + k] = in[u].v[k];
    }
  }
  __syncthreads();
  move_lines(dst, s, sj.s0, sj.s1, sj.s0, sj.s1, sj.m);
}

int blocks_for(int64_t total, int span) {
  const int64_t blocks = (total + span - 1) / span;
  CNN_CHECK(blocks < (1LL << 31), "channel padding: ", total, " elements need too many blocks");
  return int(blocks);
}

template <class T>
void check_padding(const char* op, const void* padded, int64_t rows, int c, int cp) {
  CNN_CHECK(rows >= 0 && c >= 1 && cp >= c && cp % kVec<T> == 0 && reinterpret_cast<uintptr_t>(padded) % 16 == 0, op,
            ": expected rows >= 0, 1 <= C <= CP, CP a multiple of ", kVec<T>,
            " and a 16-byte aligned padded side, got rows=", rows, " C=", c, " CP=", cp);
}

}  // namespace

template <class T>
void launch_pad_channels(std::initializer_list<PadRows<T>> tensors, cudaStream_t stream) {
  CNN_CHECK(tensors.size() <= size_t(kMaxPadTensors), "pad_channels: at most ", kMaxPadTensors,
            " tensors per launch, got ", tensors.size());
  PadLaunch<T> l{};
  int64_t blocks = 0;
  for (const PadRows<T>& t : tensors) {
    check_padding<T>("pad_channels", t.dst, t.rows, t.c, t.cp);
    if (t.rows == 0) continue;
    l.tensors[l.count] = t;
    l.first_block[l.count++] = int(blocks);
    blocks += blocks_for(t.rows * t.c, kSpan<T>);
  }
  if (l.count == 0) return;
  CNN_CHECK(blocks < (1LL << 31), "channel padding: ", blocks, " blocks are too many for one launch");
  pad_channels_kernel<T><<<unsigned(blocks), kThreads, 0, stream>>>(l);
  CNN_CHECK_LAUNCH("pad_channels");
}

template <class T>
void launch_pad_channels(const T* src, T* dst, int64_t rows, int c, int cp, cudaStream_t stream) {
  launch_pad_channels<T>({PadRows<T>{src, dst, rows, c, cp}}, stream);
}

template <class T>
void launch_crop_channels(const T* src, T* dst, int64_t rows, int cp, int c, cudaStream_t stream) {
  check_padding<T>("crop_channels", src, rows, c, cp);
  const int64_t total = rows * c;
  if (total == 0) return;
  crop_channels_kernel<T><<<blocks_for(total, kSpan<T>), kThreads, 0, stream>>>(src, dst, total, cp, c);
  CNN_CHECK_LAUNCH("crop_channels");
}

template void launch_pad_channels<float>(std::initializer_list<PadRows<float>>, cudaStream_t);
template void launch_pad_channels<__half>(std::initializer_list<PadRows<__half>>, cudaStream_t);
template void launch_pad_channels<float>(const float*, float*, int64_t, int, int, cudaStream_t);
template void launch_pad_channels<__half>(const __half*, __half*, int64_t, int, int, cudaStream_t);
template void launch_crop_channels<float>(const float*, float*, int64_t, int, int, cudaStream_t);
template void launch_crop_channels<__half>(const __half*, __half*, int64_t, int, int, cudaStream_t);

}  // namespace cnn::kernels
