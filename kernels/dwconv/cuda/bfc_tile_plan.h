// Tiling and accumulation-split rules of the backward-filter (BFC) register-tile kernel: pure host functions,
// unit-tested on the CPU. The kernel is in bfc_tile.cu, its measured tile tables in select.h; the reasoning behind
// every rule is in docs/dwconv-bfc.md.
#pragma once

#include <cstdint>
#include <string>

namespace cnn::dwconv {

// Register tile of one thread: r consecutive filter rows x tm consecutive filter columns of one channel.
struct BfcTile {
  int r = 1;
  int tm = 1;
  constexpr bool operator==(const BfcTile&) const = default;
};

// Every tile the CUDA kernel is instantiated for (bfc_tile.cu builds one kernel per entry). r * tm <= 64 keeps
// accumulators + sliding window <= 128 registers.
inline constexpr BfcTile kBfcTiles[] = {{1, 1},  {1, 2},  {1, 3},  {1, 4},  {1, 5},  {1, 6},  {1, 7}, {1, 8},
                                        {1, 9},  {1, 11}, {1, 13}, {1, 16}, {1, 17}, {1, 31}, {2, 8}, {2, 9},
                                        {2, 11}, {2, 13}, {2, 16}, {3, 3},  {3, 5},  {3, 7},  {3, 9}, {3, 11},
                                        {3, 13}, {3, 17}, {4, 4},  {4, 8},  {4, 13}, {5, 5},  {7, 7}};

// A measured tile for one filter (select.h's tables).
struct BfcMeasuredTile {
  int fh, fw;
  BfcTile tile;
};
// Hybrid accumulation on short dY row segments: `to` replaces the planner's `from` for an fh x fw (sub-)filter when
// the plan's segments are narrower than below_cols columns (select.h, kBfcHaNarrowTiles).
struct BfcNarrowTile {
  int fh, fw;
  BfcTile from, to;
  int below_cols;
};

// Test / benchmark overrides of the planner's choices; zero fields mean "let the planner decide".
struct BfcForce {
  int tile_r = 0, tile_tm = 0;  // force this register tile (must be listed in kBfcTiles)
  int z = 0;                    // force this many accumulation chunks per stride phase (clamped to N*OH)
};

// Hybrid accumulation on FP16 inputs holds an FP16 partial, an FP16 window value and two FP32 sums per tap (4
// registers, against 2 for FP32 accumulation): its tiles keep r * tm <= kBfcHaMaxTaps.
inline constexpr int kBfcHaMaxTaps = 32;

bool bfc_is_tile(int r, int tm);
bool bfc_is_forced_only(BfcTile t);

// "RxTM" naming an entry of kBfcTiles (e.g. "1x17"); anything else is a one-line error that starts with `what` (the
// variable or option it came from).
BfcTile bfc_parse_tile(const std::string& text, const char* what);

// Estimated SM issue/shared-memory cycles per (output position, channel) of a stride-1 (sub-)filter fh x fw when
// every thread holds tile t: tiles needed x max(FFMA+LDS issue over 4 schedulers, LDS wavefronts).
double bfc_tile_cost(BfcTile t, int fh, int fw);

// The measured tile of kBfcMeasuredTiles, else the cheapest tile of kBfcTiles outside kBfcTilesForcedOnly for an
// fh x fw (sub-)filter; ties go to fewer wasted taps, then the larger tile.
BfcTile bfc_choose_tile(int fh, int fw);

// bfc_choose_tile limited to tiles of r * tm <= kBfcHaMaxTaps: the tile of kBfcHaMeasuredTiles, else that of
// kBfcMeasuredTiles where it is within the limit, else the cheapest such tile by bfc_tile_cost (same tie rules).
BfcTile bfc_choose_tile_ha(int fh, int fw);

// The tile of kBfcHaNarrowTiles for a plan that chose `chosen` for an fh x fw (sub-)filter with dY segments of
// segment_cols columns, else `chosen`.
BfcTile bfc_narrow_tile_ha(BfcTile chosen, int fh, int fw, int segment_cols);

// Size of each of the fewest groups of at most max_group units that cover n_units as evenly as possible.
int bfc_group_size(int n_units, int max_group);

// Fraction of the machine busy over the whole launch when `blocks_per_chunk` blocks work on each of z chunks of
// `rows` dY rows and `slots` blocks fit on the device at once: wave quantization x chunk-length balance.
double bfc_z_efficiency(int64_t blocks_per_chunk, int64_t slots, int64_t rows, int64_t z);

// Accumulation chunks per sub-BFC: the smallest z in [1, z_max] within 3% of the best bfc_z_efficiency, where
// z_max = min(z_cap, rows / min_rows_per_chunk) (at least 1).
int64_t bfc_choose_z(int64_t blocks_per_chunk, int64_t slots, int64_t rows, int64_t min_rows_per_chunk, int64_t z_cap);

}  // namespace cnn::dwconv
