// The kernel overrides (select.h, Overrides): the text form "key=value,..." of CNN_DWCONV and dwconv-bench --kernel,
// parsed with a one-line error per bad key or value, and the process-wide overrides that select's callers read.
#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "core/error.h"
#include "kernels/dwconv/cuda/select.h"

namespace cnn::dwconv {

namespace {

template <class... A>
[[noreturn]] void bad_override(const char* what, const A&... a) {
  throw Error(str_cat(what, ": ", a...));
}

// "a|b|c": the accepted values, for the error messages.
template <class Range, class Name>
std::string alternatives(const Range& values, Name name) {
  std::string list;
  for (const auto& v : values) {
    if (!list.empty()) list += '|';
    list += name(v);
  }
  return list;
}

int parse_choice(const std::string& key, const std::string& value, std::initializer_list<int> allowed,
                 const char* what) {
  for (int a : allowed)
    if (value == std::to_string(a)) return a;
  bad_override(what, key, " must be ", alternatives(allowed, [](int a) { return std::to_string(a); }), ", got '", value,
               "'");
}

// The kernels the fwd and bfc keys name: the accepted values and their error messages read the same table.
struct KernelName {
  const char* name;
  Kernel kernel;
};
constexpr KernelName kFwdKernels[] = {{"direct", Kernel::direct},     {"tile", Kernel::direct_tile},
                                      {"vslide", Kernel::fwd_vslide}, {"tma", Kernel::fwd_tma_cc},
                                      {"gemv", Kernel::fwd_gemv},     {"cc", Kernel::fwd_cc_f16},
                                      {"ring", Kernel::fwd_tc_ring},  {"tc", Kernel::fwd_tc}};
constexpr KernelName kBfcKernels[] = {{"tile", Kernel::bfc_tile},           {"strip", Kernel::bfc_strip_f16},
                                      {"rowwarp", Kernel::bfc_rowwarp_f16}, {"small", Kernel::bfc_small},
                                      {"span", Kernel::bfc_span},           {"tc", Kernel::bfc_tc}};

template <size_t N>
Kernel parse_kernel(const std::string& key, const std::string& v, const KernelName (&names)[N], const char* what) {
  for (const KernelName& n : names)
    if (v == n.name) return n.kernel;
  bad_override(what, key, " must be ", alternatives(names, [](const KernelName& n) { return std::string(n.name); }),
               ", got '", v, "'");
}

// "TM[+ring][+whole]", each flag at most once.
GemvConfig parse_gemv(const std::string& v, const char* what) {
  GemvConfig cfg;
  size_t start = 0;
  bool ok = true;
  for (int item = 0; ok; ++item) {
    const size_t end = v.find('+', start);
    const std::string tok = v.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (item == 0) {
      ok = tok == "8" || tok == "16";
      cfg.tm = tok == "16" ? 16 : 8;
    } else if (tok == "ring" && !cfg.prefetch) {
      cfg.prefetch = true;
    } else if (tok == "whole" && !cfg.whole_filter) {
      cfg.whole_filter = true;
    } else {
      ok = false;
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (!ok) bad_override(what, "gemv must be TM[+ring][+whole] with TM 8 or 16 (e.g. 16+ring), got '", v, "'");
  return cfg;
}

void apply_override(Overrides& o, const std::string& key, const std::string& value, const char* what) {
  if (key == "verbose" && value.empty()) {
    o.verbose = true;
    return;
  }
  if (value.empty()) bad_override(what, "expected key=value, got '", key, "'");
  if (key == "fwd") {
    o.fwd = parse_kernel(key, value, kFwdKernels, what);
  } else if (key == "bfc") {
    o.bfc = parse_kernel(key, value, kBfcKernels, what);
  } else if (key == "gemv") {
    o.gemv = parse_gemv(value, what);
  } else if (key == "tma_lane") {
    o.tma_lane = parse_choice(key, value, {8, 16}, what);
  } else if (key == "tma_rows") {
    o.tma_rows = parse_choice(key, value, {1, 2}, what);
  } else if (key == "tma_cols") {
    o.tma_cols = parse_choice(key, value, {8, 16}, what);
  } else if (key == "tma_stages") {
    o.tma_stages = parse_choice(key, value, {2, 3, 4}, what);
  } else if (key == "ring_mma") {
    if (value != "taps" && value != "pairs") bad_override(what, "ring_mma must be taps|pairs, got '", value, "'");
    o.ring_mma = value == "taps" ? RingMma::taps : RingMma::pairs;
  } else if (key == "ring_q") {
    o.ring_q = parse_choice(key, value, {1, 2, 4}, what);
  } else if (key == "tile_cols") {
    o.tile_cols = parse_choice(key, value, {8, 16, 32}, what);
  } else if (key == "cc_groups") {
    o.cc_groups = parse_choice(key, value, {1, 2, 4}, what);
  } else if (key == "bfc_tile") {
    o.bfc_tile = bfc_parse_tile(value, what);
  } else if (key == "pad") {
    if (value != "on" && value != "off") bad_override(what, "pad must be on|off, got '", value, "'");
    o.pad = value == "on";
  } else {
    bad_override(what, "unknown key '", key,
                 "' (known: fwd, bfc, gemv, tma_lane, tma_rows, tma_cols, tma_stages, ring_mma, ring_q, cc_groups, "
                 "tile_cols, bfc_tile, pad, verbose)");
  }
}

Overrides& current_overrides() {
  static Overrides o = [] {
    const char* v = std::getenv("CNN_DWCONV");
    return v == nullptr ? Overrides{} : parse_overrides(v, "CNN_DWCONV");
  }();
  return o;
}

}  // namespace

Overrides parse_overrides(const std::string& text, const char* what) {
  Overrides o;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find(',', start);
    const std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) {
      const size_t eq = item.find('=');
      apply_override(o, item.substr(0, eq), eq == std::string::npos ? "" : item.substr(eq + 1), what);
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return o;
}

const Overrides& overrides() { return current_overrides(); }
void set_overrides(const Overrides& o) { current_overrides() = o; }

}  // namespace cnn::dwconv
