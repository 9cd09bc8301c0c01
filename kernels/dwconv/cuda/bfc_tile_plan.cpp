// Tile, grouping and accumulation-split rules of the backward-filter register-tile kernel (bfc_tile_plan.h); the
// measured tile tables are select.h's.
#include "kernels/dwconv/cuda/bfc_tile_plan.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/dwconv/cuda/select.h"

namespace cnn::dwconv {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <size_t N>
bool listed(const BfcTile (&list)[N], int r, int tm) {
  return std::any_of(list, list + N, [&](const BfcTile& t) { return t.r == r && t.tm == tm; });
}
}  // namespace

bool bfc_is_tile(int r, int tm) { return listed(kBfcTiles, r, tm); }

bool bfc_is_forced_only(BfcTile t) { return listed(kBfcTilesForcedOnly, t.r, t.tm); }

BfcTile bfc_parse_tile(const std::string& text, const char* what) {
  const size_t x = text.find('x');
  int r = 0, tm = 0;
  bool ok = x != std::string::npos && x > 0 && x + 1 < text.size() &&
            text.find_first_not_of("0123456789x") == std::string::npos && text.find('x', x + 1) == std::string::npos;
  if (ok) {
    r = std::stoi(text.substr(0, x));
    tm = std::stoi(text.substr(x + 1));
    ok = bfc_is_tile(r, tm);
  }
  CNN_CHECK(ok, what, ": expected RxTM naming an instantiated tile (kBfcTiles, e.g. 1x17 or 3x17), got '", text,
            "'");
  return BfcTile{r, tm};
}

double bfc_tile_cost(BfcTile t, int fh, int fw) {
  const double tiles = double(ceil_div(fh, t.r)) * double(ceil_div(fw, t.tm));
  const double issue = double(t.r * t.tm + t.r + 1) / 4.0;  // r*tm FFMA + (r+1) LDS per step, 4 schedulers per SM
  const double smem = double(t.r + 1);                      // one conflict-free wavefront per LDS.32 of 32 lanes
  return tiles * std::max(issue, smem);
}

namespace {
// The cheapest listed tile (outside kBfcTilesForcedOnly) with r * tm <= max_taps; ties go to fewer wasted taps,
// then the larger tile (fewer threads, atomics).
BfcTile cheapest_tile(int fh, int fw, int max_taps) {
  const auto waste = [&](BfcTile t) { return ceil_div(fh, t.r) * t.r * ceil_div(fw, t.tm) * t.tm - int64_t(fh) * fw; };
  BfcTile best = kBfcTiles[0];
  double best_cost = bfc_tile_cost(best, fh, fw);
  for (const BfcTile& t : kBfcTiles) {
    if (bfc_is_forced_only(t) || t.r * t.tm > max_taps) continue;
    const double cost = bfc_tile_cost(t, fh, fw);
    // Equal cost (shared-memory bound): fewer wasted taps first, then the larger tile.
    const bool tie = cost <= best_cost * (1 + 1e-9);
    const bool better_tie = waste(t) < waste(best) || (waste(t) == waste(best) && t.r * t.tm > best.r * best.tm);
    if (cost < best_cost * (1 - 1e-9) || (tie && better_tie)) {
      best = t;
      best_cost = cost;
    }
  }
  return best;
}

// The entry of a measured-tile table for an fh x fw (sub-)filter whose tile has at most max_taps taps, or null.
template <size_t N>
const BfcTile* measured_tile(const BfcMeasuredTile (&table)[N], int fh, int fw, int max_taps) {
  for (const BfcMeasuredTile& m : table)
    if (m.fh == fh && m.fw == fw && m.tile.r * m.tile.tm <= max_taps) return &m.tile;
  return nullptr;
}

BfcTile choose_tile(int fh, int fw, int max_taps) {
  if (const BfcTile* t = measured_tile(kBfcMeasuredTiles, fh, fw, max_taps)) return *t;
  return cheapest_tile(fh, fw, max_taps);
}
}  // namespace

BfcTile bfc_choose_tile(int fh, int fw) {
  CNN_CHECK(fh >= 1 && fw >= 1, "bfc_choose_tile: expected filter extents >= 1, got ", fh, "x", fw);
  return choose_tile(fh, fw, 1 << 30);
}

BfcTile bfc_choose_tile_ha(int fh, int fw) {
  CNN_CHECK(fh >= 1 && fw >= 1, "bfc_choose_tile_ha: expected filter extents >= 1, got ", fh, "x", fw);
  if (const BfcTile* t = measured_tile(kBfcHaMeasuredTiles, fh, fw, kBfcHaMaxTaps)) return *t;
  return choose_tile(fh, fw, kBfcHaMaxTaps);
}

BfcTile bfc_narrow_tile_ha(BfcTile chosen, int fh, int fw, int segment_cols) {
  for (const BfcNarrowTile& n : kBfcHaNarrowTiles)
    if (n.fh == fh && n.fw == fw && n.from == chosen && segment_cols < n.below_cols)
      return n.to;
  return chosen;
}

int bfc_group_size(int n_units, int max_group) {
  CNN_CHECK(n_units >= 1 && max_group >= 1, "bfc_group_size: expected positive arguments, got ", n_units, ", ",
            max_group);
  const int64_t groups = ceil_div(n_units, max_group);
  return int(ceil_div(n_units, groups));
}

double bfc_z_efficiency(int64_t blocks_per_chunk, int64_t slots, int64_t rows, int64_t z) {
  const int64_t blocks = blocks_per_chunk * z;
  const double waves = double(ceil_div(blocks, slots));
  const double wave_eff = double(blocks) / (waves * double(slots));
  const double balance = (double(rows) / double(z)) / double(ceil_div(rows, z));  // longest chunk sets the time
  return wave_eff * balance;
}

int64_t bfc_choose_z(int64_t blocks_per_chunk, int64_t slots, int64_t rows, int64_t min_rows_per_chunk, int64_t z_cap) {
  CNN_CHECK(blocks_per_chunk >= 1 && slots >= 1 && rows >= 1 && min_rows_per_chunk >= 1 && z_cap >= 1,
            "bfc_choose_z: expected positive arguments, got blocks_per_chunk=", blocks_per_chunk, " slots=", slots,
            " rows=", rows, " min_rows_per_chunk=", min_rows_per_chunk, " z_cap=", z_cap);
  const int64_t z_max = std::max<int64_t>(1, std::min(z_cap, rows / min_rows_per_chunk));
  double best = 0;
  for (int64_t z = 1; z <= z_max; ++z) best = std::max(best, bfc_z_efficiency(blocks_per_chunk, slots, rows, z));
  for (int64_t z = 1; z <= z_max; ++z)
    if (bfc_z_efficiency(blocks_per_chunk, slots, rows, z) >= 0.97 * best) return z;
  return z_max;
}

}  // namespace cnn::dwconv
