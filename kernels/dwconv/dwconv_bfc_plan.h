// Tiling and accumulation-split decisions of the FP32 CUDA backward-filter (BFC) kernels: pure host functions,
// unit-tested on the CPU. The kernels are in dwconv_bfc.cu; the reasoning behind every rule is in docs/dwconv-bfc.md.
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

// Every tile the CUDA kernel is instantiated for (dwconv_bfc.cu builds one kernel per entry). r * tm <= 64 keeps
// accumulators + sliding window <= 128 registers.
inline constexpr BfcTile kBfcTiles[] = {{1, 1},  {1, 2},  {1, 3},  {1, 4},  {1, 5},  {1, 6},  {1, 7}, {1, 8},
                                        {1, 9},  {1, 11}, {1, 13}, {1, 16}, {1, 17}, {1, 31}, {2, 8}, {2, 9},
                                        {2, 11}, {2, 13}, {2, 16}, {3, 3},  {3, 5},  {3, 7},  {3, 9}, {3, 11},
                                        {3, 13}, {3, 17}, {4, 4},  {4, 8},  {4, 13}, {5, 5},  {7, 7}};

// Tiles the planner never picks on its own (forcing still reaches them): ptxas gives them 193 and 203 registers, so
// their 3- and 4-warp blocks leave 9-12 warps per SM, too few to cover each dY row's barrier and shared-memory
// latency. Measured on the H200 at 51x51 (docs/perf/dwconv-fp32-h200.md, fifth session): 3x13 (128 registers)
// 33.3 TFLOP/s against 3x17's 24.4, although the cost model rates 3x17 4% cheaper.
inline constexpr BfcTile kBfcTilesForcedOnly[] = {{3, 17}, {4, 13}};

// Filters whose fastest tile, measured on the H200 over the three maps of the benchmark sweep, is not the cost
// model's pick (the model's candidates there lie within 1-10% of each other; it counts a step's FFMA and LDS issue but
// not what a tile does once per dY row, nor occupancy). docs/perf/dwconv-fp32-h200.md, h200-2026-11-30f:
// 51x51 ran 33.3 TFLOP/s with 3x13 against 30.7 with the model's 1x17 and 24.4 with 3x17 (fifth session); with the
// sixth session's staging, 13x13 runs 2x13 1.01-1.16x faster than the model's 1x13 and 31x31 2x16 1.04-1.14x faster
// than 1x31 (on the old staging, earlier that session, the same order on five of the six map-width pairs).
struct BfcMeasuredTile {
  int fh, fw;
  BfcTile tile;
};
inline constexpr BfcMeasuredTile kBfcMeasuredTiles[] = {{13, 13, {2, 13}}, {31, 31, {2, 16}}, {51, 51, {3, 13}}};

// Test / benchmark overrides of the dispatcher's choices; zero fields mean "let the planner decide".
struct BfcForce {
  int tile_r = 0, tile_tm = 0;  // force this register tile (must be listed in kBfcTiles)
  int z = 0;                    // force this many accumulation chunks per stride phase (clamped to N*OH)
  bool generic = false;         // force the simple per-(tap, channel) reduction kernel
};

// Hybrid accumulation on FP16 inputs holds an FP16 partial, an FP16 window value and two FP32 sums per tap (4
// registers, against 2 for FP32 accumulation): its tiles keep r * tm <= kBfcHaMaxTaps.
inline constexpr int kBfcHaMaxTaps = 32;

// Hybrid accumulation's own measured tiles, where the cost model's pick (or kBfcMeasuredTiles' tile, over
// kBfcHaMaxTaps at 51x51) lost on the H200 (seventh session, docs/perf/dwconv-fp16-h200.md, h200-2026-11-30g): 7x7
// ran 2x8 1.37-1.38x faster than the model's 1x7 (3x7 1.11-1.12x, 4x8 1.34-1.36x), 9x9 2x9 1.10-1.29x faster than
// 3x9, 51x51 2x13 1.05-1.31x faster than 1x17 (2x9 and 3x9 slower). The same tiles lost with FP32 accumulation
// (7x7: 2x8 0.75-0.84x of 7x7; 9x9: 2x9 0.83-0.97x of 3x9), whose tiles may hold twice the taps. Within the budget
// kBfcMeasuredTiles held for ha too (31x31: 2x16 2.1-2.3x faster than the model's 1x31). Re-measured after the
// eleventh session's whole-run ha kernel (h200-2026-11-30k call 8, forced tiles against call 7's defaults, three
// maps): 9x9 3x9 1.06-1.23x faster than 2x9, 31x31 1x31 1.10x faster than 2x16 on each map, 13x13 1x13 1.07x faster
// than 2x13 where its dY segments are 64 columns (0.95x at 32: kBfcHaNarrowTiles), 7x7 1x7 0.99-1.01x and 3x7
// 0.96-0.99x of 2x8 (kept); 17x17 and 51x51 were not re-measured.
inline constexpr BfcMeasuredTile kBfcHaMeasuredTiles[] = {
    {7, 7, {2, 8}}, {9, 9, {3, 9}}, {13, 13, {1, 13}}, {31, 31, {1, 31}}, {51, 51, {2, 13}}};

// Hybrid accumulation on short dY row segments: a thread of a 1 x TM tile loads TM - 1 window values before its
// first step of every segment, and where the segment is short another tile wins. Measured on the H200 (tenth
// session, h200-2026-11-30j call 1, 17x17 on seven row widths): 2x9 ran 1.13-1.23x faster than 1x17 where the 1x17
// plan's segments were 24 or 32 columns (widths 24, 32, 96), tied at 16 and 48, and lost (0.92-0.94x) at 64
// (widths 64, 128). 13x13 (eleventh session, three maps only): 1x13 with 32-column segments 0.95x of 2x13, with
// 64-column segments 1.07x. Applies when the planner chose `from` for an fh x fw (sub-)filter and the segments of
// that plan are narrower than below_cols.
struct BfcNarrowTile {
  int fh, fw;
  BfcTile from, to;
  int below_cols;
};
inline constexpr BfcNarrowTile kBfcHaNarrowTiles[] = {{13, 13, {1, 13}, {2, 13}, 48}, {17, 17, {1, 17}, {2, 9}, 48}};

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
