// Tile choice and task split of the small-filter backward-filter kernel (bfc_small_plan.h).
#include "kernels/dwconv/cuda/bfc_small_plan.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace cnn::dwconv {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

double bfc_small_cost(bool f16, const BfcSmallTile& t, int fh, int oh, int c) {
  const int rows_x = t.nr + t.th - 1, widen = f16 ? t.p : 0;  // one conversion per half
  const double step = double(t.th) * t.nr * t.fw * t.p        // FFMA
                      + rows_x * (2.0 + widen)                // X: address, load, conversions
                      + t.th * (3.0 + widen)                  // dY: address, load bounded by OW, conversions
                      + 2.0;                                  // loop
  const double row_groups = double(ceil_div(fh, t.nr));
  const double rows_done = double(ceil_div(oh, t.th) * t.th) / oh;
  const double lanes_done = double(ceil_div(c, 32 * t.p) * 32 * t.p) / c;
  return row_groups * step / (double(t.th) * t.p) * rows_done * lanes_done;
}

BfcSmallTile bfc_small_tile(bool f16, int fh, int fw, int oh, int c, int p_max, int force_p, int force_nr) {
  CNN_CHECK(fh >= 1 && fh <= kBfcSmallMaxF && fw >= 1 && fw <= kBfcSmallMaxF && oh >= 1 && c >= 1 &&
                (p_max == 1 || p_max == 2) && force_p >= 0 && force_p <= p_max && force_nr >= 0,
            "bfc_small_tile: expected a filter of 1x1 to ", kBfcSmallMaxF, "x", kBfcSmallMaxF,
            ", OH, C >= 1, lanes of at most 1 or 2 channels and forced lanes within them, got ", fh, "x", fw,
            " OH=", oh, " C=", c, " P<=", p_max, " forced P=", force_p, " rows=", force_nr);
  int fw_tile = 0;
  for (int t : kBfcSmallColTiles)
    if (fw_tile == 0 && t >= fw) fw_tile = t;
  BfcSmallTile best{0, 0, 0, 0};  // th = 0: none found yet
  double best_cost = std::numeric_limits<double>::infinity();
  for (int p = force_p > 0 ? force_p : 1; p <= (force_p > 0 ? force_p : p_max); ++p)
    for (int nr : kBfcSmallRowTiles) {
      const BfcSmallTile t{p, nr, fw_tile, bfc_small_rows_per_thread(f16, p, nr, fw_tile)};
      if (t.th == 0 || (force_nr > 0 && nr != force_nr)) continue;
      const double cost = bfc_small_cost(f16, t, fh, oh, c);
      const bool tie = cost <= best_cost * (1 + 1e-9) && cost >= best_cost * (1 - 1e-9);
      if (cost < best_cost * (1 - 1e-9) || (tie && (t.p > best.p || (t.p == best.p && t.th > best.th)))) {
        best = t;
        best_cost = cost;
      }
    }
  CNN_CHECK(best.th > 0, "bfc_small_tile: no instantiated tile for a ", fh, "x", fw, " filter with lanes of ",
            force_p > 0 ? force_p : p_max, force_nr > 0 ? " and the forced row count" : "");
  return best;
}

int bfc_small_chunks(int64_t tasks, int64_t slices, int64_t slots) {
  CNN_CHECK(tasks >= 1 && slices >= 1 && slots >= 1, "bfc_small_chunks: expected tasks, slices, slots >= 1, got ",
            tasks, ", ", slices, ", ", slots);
  // Beyond four waves of blocks more chunks only add atomics.
  const int64_t z_max = std::min<int64_t>(tasks, std::max<int64_t>(1, ceil_div(4 * slots, slices)));
  int64_t best_z = 1, best_time = std::numeric_limits<int64_t>::max();
  for (int64_t z = 1; z <= z_max; ++z) {
    const int64_t waves = ceil_div(slices * z, slots), rounds = ceil_div(ceil_div(tasks, z), kBfcSmallWarps);
    if (waves * rounds < best_time) best_z = z, best_time = waves * rounds;
  }
  return int(best_z);
}

}  // namespace cnn::dwconv
