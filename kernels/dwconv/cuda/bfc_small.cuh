// The thread and block routines of the small-filter backward-filter kernel (Kernel::bfc_small, bfc_small.cu):
// dW[i,j,c] = sum_{n,oh,ow} X[n, oh+i-pT, ow+j-pL, c] * dY[n,oh,ow,c] at stride 1, X and dY (N,H,W,C) in FP16 or
// FP32, dW (FH,FW,C) FP32 with FP32 accumulation. __host__ __device__ so that the host simulation test runs this same
// code; the design notes are in bfc_small.cu.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>

#include "kernels/dwconv/cuda/bfc_small_plan.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::dwconv::bfc_small {

inline constexpr int kLanes = 32;
inline constexpr int kWarps = kBfcSmallWarps;
inline constexpr int kThreads = kLanes * kWarps;
inline constexpr int kDepth = kBfcSmallDepth;  // steps whose loads are in flight ahead of the FMAs

// What a launch covers: a task is one filter row group (kNr rows from fg * kNr) against one group of th consecutive
// dY rows of one image (g = n * gh + oh / th), over every dY column; tasks are numbered t = g * ng + fg. Block b
// takes channel slice b % slices and the chunk b / slices of [0, groups * ng) tasks (z chunks, balanced).
struct Args {
  const void* x;   // (N, IH, IW, C)
  const void* dy;  // (N, OH, OW, C)
  float* dw;       // (FH, FW, C), zeroed; one add per (tap, channel) per block
  int ih, iw, c, oh, ow, fh, fw, pt, pl;
  int ng;       // filter row groups
  int gh;       // dY row groups per image: ceil(OH / th)
  int groups;   // N * gh
  int slices;   // channel slices of block_c = 32 * P channels
  int block_c;  // channels per slice
  int z;        // chunks of tasks per slice
  int steps;    // X columns a task walks: min(IW, OW + FW - 1 - pL), at least 0
};

// The arguments of a launch of tile t on p with z chunks per slice (the pointers set by the caller).
inline Args make_args(const DwconvParams& p, const BfcSmallTile& t, int z) {
  const auto ceil_div = [](int64_t a, int64_t b) { return static_cast<int>((a + b - 1) / b); };
  Args a{};
  a.ih = p.ih, a.iw = p.iw, a.c = p.c, a.oh = p.oh(), a.ow = p.ow(), a.fh = p.fh, a.fw = p.fw;
  a.pt = p.pad_top, a.pl = p.pad_left;
  a.ng = ceil_div(p.fh, t.nr);
  a.gh = ceil_div(a.oh, t.th);
  a.groups = p.n * a.gh;  // <= N * OH < 2^31
  a.block_c = kLanes * t.p;
  a.slices = ceil_div(p.c, a.block_c);
  a.z = z;
  a.steps = std::max(0, std::min(p.iw, a.ow + p.fw - 1 - p.pad_left));
  return a;
}
inline int64_t tasks_per_slice(const Args& a) { return static_cast<int64_t>(a.groups) * a.ng; }

// A lane's P adjacent channels as one load (Raw), widened to FP32.
template <class T, int kP>
struct Lane;
template <>
struct Lane<__half, 1> {
  using Raw = __half;
  __host__ __device__ static void widen(Raw v, float* f) { f[0] = __half2float(v); }
};
template <>
struct Lane<__half, 2> {
  using Raw = __half2;
  __host__ __device__ static void widen(Raw v, float* f) {
    const float2 t = __half22float2(v);
    f[0] = t.x, f[1] = t.y;
  }
};
template <>
struct Lane<float, 1> {
  using Raw = float;
  __host__ __device__ static void widen(Raw v, float* f) { f[0] = v; }
};
template <>
struct Lane<float, 2> {
  using Raw = float2;
  __host__ __device__ static void widen(Raw v, float* f) { f[0] = v.x, f[1] = v.y; }
};

// A read-only load through the non-coherent path on the device; a plain copy in the host simulation.
template <class R>
__host__ __device__ __forceinline__ R load(const char* p) {
#ifdef __CUDA_ARCH__
  return __ldg(reinterpret_cast<const R*>(p));
#else
  R v;
  std::memcpy(&v, p, sizeof(R));
  return v;
#endif
}

// *p += v: an atomic add on the device (shared block sums, global dW); a plain add in the host simulation, which
// runs one thread at a time.
__host__ __device__ __forceinline__ void add_to(float* p, float v) {
#ifdef __CUDA_ARCH__
  atomicAdd(p, v);
#else
  *p += v;
#endif
}

// One thread: P channels x kNr filter rows x kFw filter columns of FP32 sums, filled task by task.
template <class T, int kP, int kNr, int kFw>
class SmallThread {
  using L = Lane<T, kP>;
  using Raw = typename L::Raw;
  static constexpr bool kF16 = sizeof(T) == 2;
  static constexpr int kTh = bfc_small_rows_per_thread(kF16, kP, kNr, kFw);
  static constexpr int kR = kNr + kTh - 1;       // X rows of a task
  static constexpr int kU = kFw >= 3 ? kFw : 4;  // steps per unrolled block: a multiple of kFw
  static_assert(kTh >= 1, "no dY row count fits this tile's register budget");
  static_assert(kU % kFw == 0, "ring slots are compile-time when a block starts at a multiple of kFw");

  // The raw loads of one step: X column k of the kR rows, dY column k + pL of the kTh rows.
  struct Step {
    Raw x[kR];
    Raw d[kTh];
  };

 public:
  float acc[kNr][kFw][kP];

  __host__ __device__ void clear() {
#pragma unroll
    for (int i = 0; i < kNr; ++i)
#pragma unroll
      for (int j = 0; j < kFw; ++j)
#pragma unroll
        for (int p = 0; p < kP; ++p) acc[i][j][p] = 0.f;
  }

  // Adds one task's products: filter rows i0 .. i0 + kNr - 1 (those >= FH are computed and dropped by flush) against
  // dY rows oh0 .. oh0 + kTh - 1 of image n (those >= OH read as zeros), channels c .. c + kP - 1.
  //
  // The thread walks the X columns k = 0 .. steps - 1 (every column some tap of the filter reaches). Step k brings
  // X column k of the kR rows and dY column k + pL of the kTh rows; tap (i, j) of dY row t takes X[row t + i][k] *
  // dY[t][k + pL - j], so each X value is used as loaded and the dY values wait in a ring of kFw columns: column
  // ow sits in slot ow - pL mod kFw (the prologue fills the slots of columns pL - 1 .. pL - kFw + 1, zeros outside
  // [0, OW)). Rows outside the image and lanes past C read a zero buffer with a column stride of 0, so that no load
  // needs a predicate beyond dY's column bound; the loads of step k + kDepth are issued before the FMAs of step k.
  __host__ __device__ void task(const Args& a, const char* zeros, int c, bool lane_ok, int g, int i0) {
    const int n = g / a.gh, oh0 = (g - n * a.gh) * kTh;
    const T* x = static_cast<const T*>(a.x);
    const T* dy = static_cast<const T*>(a.dy);
    const int stride = a.c * static_cast<int>(sizeof(T));  // bytes per column (bfc_small_supports: < 2^31)
    const char* xr[kR];
    int xs[kR];
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int ih = oh0 + i0 + r - a.pt;
      const bool ok = lane_ok && static_cast<unsigned>(ih) < static_cast<unsigned>(a.ih);
      // Element offsets below x_elems < 2^31 (DwconvParams::validate).
      xr[r] = ok ? reinterpret_cast<const char*>(x + ((n * a.ih + ih) * a.iw * a.c + c)) : zeros;
      xs[r] = ok ? stride : 0;
    }
    const char* dr[kTh];
    int ds[kTh];
#pragma unroll
    for (int t = 0; t < kTh; ++t) {
      const int oh = oh0 + t;
      const bool ok = lane_ok && oh < a.oh;
      dr[t] = ok ? reinterpret_cast<const char*>(dy + ((n * a.oh + oh) * a.ow * a.c + c)) : zeros;
      ds[t] = ok ? stride : 0;
    }
    float ring[kTh][kFw][kP];
#pragma unroll
    for (int j = 1; j < kFw; ++j) {
      const int col = a.pl - j;
      const bool ok = static_cast<unsigned>(col) < static_cast<unsigned>(a.ow);
#pragma unroll
      for (int t = 0; t < kTh; ++t)
        L::widen(ok ? load<Raw>(dr[t] + static_cast<long long>(col) * ds[t]) : Raw{}, ring[t][kFw - j]);
    }
    const auto fetch = [&](int k) {
      Step v;
#pragma unroll
      for (int r = 0; r < kR; ++r) v.x[r] = load<Raw>(xr[r] + static_cast<long long>(k) * xs[r]);
      const int col = k + a.pl;
      const bool ok = col < a.ow;
#pragma unroll
      for (int t = 0; t < kTh; ++t) v.d[t] = ok ? load<Raw>(dr[t] + static_cast<long long>(col) * ds[t]) : Raw{};
      return v;
    };
    // Step k with its loads in `v`; phase = k mod kFw, a constant once the caller's loop is unrolled.
    const auto consume = [&](const Step& v, int phase) {
#pragma unroll
      for (int t = 0; t < kTh; ++t) L::widen(v.d[t], ring[t][phase]);
      float xv[kR][kP];
#pragma unroll
      for (int r = 0; r < kR; ++r) L::widen(v.x[r], xv[r]);
#pragma unroll
      for (int t = 0; t < kTh; ++t)
#pragma unroll
        for (int i = 0; i < kNr; ++i)
#pragma unroll
          for (int j = 0; j < kFw; ++j)
#pragma unroll
            for (int p = 0; p < kP; ++p)
              acc[i][j][p] = fmaf(xv[t + i][p], ring[t][(phase + kFw - j) % kFw][p], acc[i][j][p]);
    };
    const int steps = a.steps;
    Step q[kDepth];  // q[d]: the loads of step k + d
#pragma unroll
    for (int d = 0; d < kDepth; ++d)
      if (d < steps) q[d] = fetch(d);
    const auto advance = [&](int k, int phase) {
      const Step cur = q[0];
#pragma unroll
      for (int d = 0; d + 1 < kDepth; ++d) q[d] = q[d + 1];
      if (k + kDepth < steps) q[kDepth - 1] = fetch(k + kDepth);
      consume(cur, phase);
    };
    int k = 0;
    for (; k + kU <= steps; k += kU) {
#pragma unroll
      for (int s = 0; s < kU; ++s) advance(k + s, s % kFw);
    }
#pragma unroll
    for (int s = 0; s < kU; ++s)
      if (k + s < steps) advance(k + s, s % kFw);
  }

  // Adds the sums of filter rows i0 .. into the block sums red[tap * block_c + channel in slice] and clears them.
  __host__ __device__ void flush(const Args& a, float* red, int cl, int i0) {
#pragma unroll
    for (int i = 0; i < kNr; ++i)
#pragma unroll
      for (int j = 0; j < kFw; ++j) {
        if (i0 + i < a.fh && j < a.fw)
#pragma unroll
          for (int p = 0; p < kP; ++p) add_to(&red[((i0 + i) * a.fw + j) * a.block_c + cl + p], acc[i][j][p]);
      }
    clear();
  }
};

// Thread `thread` of block `block`: lane = kP adjacent channels of the block's slice, warp w takes the tasks
// t_begin + w, t_begin + w + kWarps, ... of the block's chunk, flushing its sums into the block sums `red`
// (FH*FW*block_c floats, zeroed) whenever the filter row group changes and at the end.
template <class T, int kP, int kNr, int kFw>
__host__ __device__ void run_thread(const Args& a, const char* zeros, int block, int thread, float* red) {
  const int slice = block % a.slices, chunk = block / a.slices;
  const int warp = thread / kLanes, cl = thread % kLanes * kP;
  const int c = slice * a.block_c + cl;
  const bool lane_ok = c < a.c;  // kP = 2 only at an even C: both channels then
  const long long tasks = static_cast<long long>(a.groups) * a.ng;
  const int t_begin = static_cast<int>(tasks * chunk / a.z), t_end = static_cast<int>(tasks * (chunk + 1) / a.z);
  SmallThread<T, kP, kNr, kFw> th;
  th.clear();
  int fg_cur = -1;
  for (int t = t_begin + warp; t < t_end; t += kWarps) {
    const int g = t / a.ng, fg = t - g * a.ng;
    if (fg != fg_cur) {
      if (fg_cur >= 0 && lane_ok) th.flush(a, red, cl, fg_cur * kNr);
      fg_cur = fg;
    }
    th.task(a, zeros, c, lane_ok, g, fg * kNr);
  }
  if (fg_cur >= 0 && lane_ok) th.flush(a, red, cl, fg_cur * kNr);
}

// After every thread's run_thread: thread `thread` of `threads` adds its share of the block sums into dW, one add
// per (tap, channel), consecutive threads on consecutive channels.
__host__ __device__ inline void flush_block(const Args& a, int block, int thread, int threads, const float* red) {
  const int slice = block % a.slices, n = a.fh * a.fw * a.block_c;
  for (int e = thread; e < n; e += threads) {
    const int tap = e / a.block_c, c = slice * a.block_c + (e - tap * a.block_c);
    if (c < a.c) add_to(a.dw + static_cast<long long>(tap) * a.c + c, red[e]);
  }
}

// The instantiated tiles, I = ((P - 1) * rows + row tile) * columns + column tile, those with dY rows only.
inline constexpr int kRowTileCount = static_cast<int>(std::size(kBfcSmallRowTiles));
inline constexpr int kColTileCount = static_cast<int>(std::size(kBfcSmallColTiles));
constexpr BfcSmallTile tile_at(bool f16, int i) {
  const int p = i / (kRowTileCount * kColTileCount) + 1, nr = kBfcSmallRowTiles[i / kColTileCount % kRowTileCount];
  const int fw = kBfcSmallColTiles[i % kColTileCount];
  return BfcSmallTile{p, nr, fw, bfc_small_rows_per_thread(f16, p, nr, fw)};
}
template <bool kF16, int I, class F>
bool call_if_tile(const BfcSmallTile& t, F& f) {
  constexpr BfcSmallTile k = tile_at(kF16, I);
  if constexpr (k.th > 0) {
    if (t.p == k.p && t.nr == k.nr && t.fw == k.fw) {
      f.template operator()<k.p, k.nr, k.fw>();
      return true;
    }
  }
  return false;
}
template <bool kF16, class F, int... I>
bool with_tile_in(const BfcSmallTile& t, F& f, std::integer_sequence<int, I...>) {
  return (call_if_tile<kF16, I>(t, f) || ...);
}
// Calls f.template operator()<kP, kNr, kFw>() for the instantiated tile matching t's lanes, rows and columns; false
// where there is none.
template <bool kF16, class F>
bool with_tile(const BfcSmallTile& t, F&& f) {
  return with_tile_in<kF16>(t, f, std::make_integer_sequence<int, 2 * kRowTileCount * kColTileCount>{});
}

}  // namespace cnn::dwconv::bfc_small
