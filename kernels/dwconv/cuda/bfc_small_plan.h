// Planning rules of the small-filter backward-filter kernel (bfc_small.cu): the instantiated thread tiles, how many
// dY rows a thread takes at once, which tile a shape runs and how its tasks split over blocks. Pure host functions,
// unit-tested on the CPU; docs/dwconv-bfc.md explains them.
#pragma once

#include <cstdint>

namespace cnn::dwconv {

inline constexpr int kBfcSmallMaxF = 7;   // FH, FW up to 7
inline constexpr int kBfcSmallWarps = 8;  // warps per block
inline constexpr int kBfcSmallDepth = 2;  // steps of loads issued ahead of the FMAs that use them
// Filter rows (nr) and columns (fw) per thread that are instantiated; a filter runs on the smallest column tile >= FW
// (the extra columns computed and dropped: FW 2, 4, 6 only) and on ceil(FH / nr) row groups of one nr.
inline constexpr int kBfcSmallRowTiles[] = {1, 2, 3, 4, 5};  // kBfcSmallRows indexes them as nr - 1
inline constexpr int kBfcSmallColTiles[] = {1, 3, 5, 7};

// dY rows per task (th) of each instantiated tile, [FP16][P - 1][nr - 1][column tile]: the most of 8, 4, 2, 1 with
// which ptxas (nvcc 13.0, sm_90, bfc_small.cu's launch bounds of 128 registers: two blocks of 8 warps per SM) compiles
// the kernel without spills; 0: not even one row fits, no kernel. Sums, dY ring and two steps of loads grow with
// P * nr * FW', so wider tiles take fewer rows (FP16, one channel per lane: 5x5 2 rows, 3x3 4).
inline constexpr int kBfcSmallRows[2][2][5][4] = {
    // FP32 (P = 1, then P = 2), columns 1, 3, 5, 7
    {{{4, 4, 4, 4}, {4, 4, 4, 4}, {4, 4, 4, 4}, {4, 4, 2, 2}, {4, 4, 2, 1}},
     {{4, 4, 2, 2}, {2, 4, 2, 1}, {2, 2, 1, 1}, {2, 2, 1, 0}, {2, 2, 0, 0}}},
    // FP16
    {{{8, 4, 4, 4}, {4, 4, 4, 4}, {4, 4, 4, 2}, {4, 4, 2, 2}, {4, 4, 2, 2}},
     {{8, 4, 4, 2}, {4, 4, 2, 2}, {4, 4, 2, 2}, {4, 4, 2, 1}, {4, 2, 1, 0}}},
};
// The dY rows of a tile (P in 1..2, nr a row tile, fw a column tile), 0 where it has no kernel.
constexpr int bfc_small_rows_per_thread(bool f16, int p, int nr, int fw) {
  int col = -1;
  for (int i = 0; i < int(sizeof(kBfcSmallColTiles) / sizeof(int)); ++i)
    if (kBfcSmallColTiles[i] == fw) col = i;
  bool row = false;
  for (int r : kBfcSmallRowTiles) row = row || r == nr;
  if (p < 1 || p > 2 || !row || col < 0) return 0;
  return kBfcSmallRows[f16 ? 1 : 0][p - 1][nr - 1][col];
}

// A thread tile: P adjacent channels per lane, nr filter rows x fw filter columns, th dY rows per task.
struct BfcSmallTile {
  int p = 1, nr = 1, fw = 1, th = 1;
  constexpr bool operator==(const BfcSmallTile&) const = default;
};

// The tile for an fh x fw filter (both <= kBfcSmallMaxF) on maps of `oh` dY rows and `c` channels, lanes of at most
// p_max channels (2 where C is even and the tensors aligned to 2 elements, else 1): the lowest estimated issue per
// (dY position, channel), counting FFMA, loads with their address and conversion instructions, filter rows
// computed past FH, dY rows past OH and lanes past C; ties go to the wider lane, then more dY rows. force_p and
// force_nr (> 0) restrict the candidates to that lane width and row count (an error where no kernel has them).
BfcSmallTile bfc_small_tile(bool f16, int fh, int fw, int oh, int c, int p_max, int force_p = 0, int force_nr = 0);
// Issue slots per (dY position, channel) of tile t on that shape (what bfc_small_tile minimizes).
double bfc_small_cost(bool f16, const BfcSmallTile& t, int fh, int oh, int c);

// Chunks per channel slice for `tasks` equal tasks per slice, `slices` slices and `slots` resident blocks: the
// fewest chunks with the least time in task lengths, waves x ceil(tasks per block / kBfcSmallWarps).
int bfc_small_chunks(int64_t tasks, int64_t slices, int64_t slots);

}  // namespace cnn::dwconv
