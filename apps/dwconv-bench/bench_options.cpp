// Command-line parsing for dwconv-bench (CLI11) with explicit one-line errors for every malformed value.
#include "apps/dwconv-bench/bench_options.h"


#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <limits>

#include "core/error.h"
#include "kernels/dwconv/cuda/select.h"

namespace cnn::bench {
namespace {

constexpr const char* kDefaultOps = "fwd,bdc,bfc";
constexpr const char* kDefaultMaps = "128x128x128x128,128x64x64x256,128x32x32x1024";
constexpr const char* kDefaultFilters = "3,5,7,9,13,17,31,51";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    size_t end = s.find(sep, begin);
    parts.push_back(s.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return parts;
}

// Whole-string positive int, or a one-line error naming the flag and the offending text.
int parse_positive(const std::string& text, const char* flag, const char* what) {
  int value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  CNN_CHECK(ec == std::errc() && ptr == end && value >= 1, flag, ": expected ", what, " as a positive integer, got '",
            text, "'");
  return value;
}

}  // namespace

std::string MapShape::str() const { return str_cat(n, "x", h, "x", w, "x", c); }

const char* op_short_name(dwconv::DwconvOp op) {
  switch (op) {
    case dwconv::DwconvOp::forward:
      return "fwd";
    case dwconv::DwconvOp::backward_data:
      return "bdc";
    case dwconv::DwconvOp::backward_filter:
      return "bfc";
  }
  return "?";
}

std::vector<dwconv::DwconvOp> parse_ops(const std::string& list) {
  std::vector<dwconv::DwconvOp> ops;
  for (const std::string& name : split(list, ',')) {
    dwconv::DwconvOp op;
    if (name == "fwd") {
      op = dwconv::DwconvOp::forward;
    } else if (name == "bdc") {
      op = dwconv::DwconvOp::backward_data;
    } else if (name == "bfc") {
      op = dwconv::DwconvOp::backward_filter;
    } else {
      throw Error(str_cat("--op: expected a comma-separated list of fwd, bdc, bfc, got '", name, "' in '", list, "'"));
    }
    for (dwconv::DwconvOp seen : ops) CNN_CHECK(seen != op, "--op: '", name, "' listed twice in '", list, "'");
    ops.push_back(op);
  }
  return ops;
}

std::vector<MapShape> parse_maps(const std::string& list) {
  std::vector<MapShape> maps;
  for (const std::string& item : split(list, ',')) {
    std::vector<std::string> dims = split(item, 'x');
    CNN_CHECK(dims.size() == 4, "--maps: expected NxHxWxC (e.g. 128x64x64x256), got '", item, "'");
    MapShape m;
    m.n = parse_positive(dims[0], "--maps", "N");
    m.h = parse_positive(dims[1], "--maps", "H");
    m.w = parse_positive(dims[2], "--maps", "W");
    m.c = parse_positive(dims[3], "--maps", "C");
    // cuDNN's legacy descriptors take int strides, so one tensor must stay below 2^31 elements.
    const int64_t elems = int64_t(m.n) * m.h * m.w * m.c;
    CNN_CHECK(elems <= std::numeric_limits<int32_t>::max(), "--maps: ", item, " has ", elems,
              " elements, expected at most 2^31-1 per tensor");
    maps.push_back(m);
  }
  return maps;
}

std::vector<int> parse_filters(const std::string& list) {
  std::vector<int> filters;
  for (const std::string& item : split(list, ',')) {
    const int f = parse_positive(item, "--filters", "a filter size");
    CNN_CHECK(f % 2 == 1, "--filters: expected odd sizes ('same' padding F/2 on each side), got ", f);
    filters.push_back(f);
  }
  return filters;
}

dwconv::DwconvParams same_padding_params(const MapShape& m, int filter, int stride) {
  dwconv::DwconvParams p;
  p.n = m.n;
  p.ih = m.h;
  p.iw = m.w;
  p.c = m.c;
  p.fh = p.fw = filter;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = filter / 2;
  p.stride_h = p.stride_w = stride;
  p.validate("dwconv-bench");
  return p;
}

bool parse_bench_options(int argc, char** argv, BenchOptions& opts, int& exit_code) {
  CLI::App app{
      "dwconv-bench: Flash-DWC vs cuDNN (all algorithms), cuBLAS SGEMM and device copy, FP32 or FP16, 'same' "
      "padding"};
  std::string ops = kDefaultOps, maps = kDefaultMaps, filters = kDefaultFilters, dtype = "f32", accum = "fp32";
  app.add_option("--op", ops, "comma-separated ops: fwd, bdc (backward-data), bfc (backward-filter)")
      ->capture_default_str();
  CLI::Option* maps_opt =
      app.add_option("--maps", maps, "comma-separated feature maps NxHxWxC (NHWC)")->capture_default_str();
  CLI::Option* filters_opt =
      app.add_option("--filters", filters, "comma-separated odd square filter sizes")->capture_default_str();
  app.add_option("--stride", opts.stride, "stride on both axes (output ceil(H/stride) x ceil(W/stride))")
      ->capture_default_str();
  CLI::Option* reps_opt =
      app.add_option("--reps", opts.reps, "timed runs per measurement (median reported)")->capture_default_str();
  CLI::Option* warmup_opt =
      app.add_option("--warmup", opts.warmup, "untimed runs before timing")->capture_default_str();
  app.add_option("--out", opts.out_csv, "CSV file to write (atomically: temp file + rename)");
  bool no_cudnn = false, no_check = false;
  CLI::Option* no_cudnn_opt = app.add_flag("--no-cudnn", no_cudnn, "skip the cuDNN baseline");
  CLI::Option* engines_opt =
      app.add_flag("--cudnn-engines", opts.cudnn_engines,
                   "also time every engine of cuDNN's backend (graph) API for each point, before the legacy "
                   "algorithms; the fastest of both is the baseline")
          ->excludes(no_cudnn_opt);
  bool no_legacy = false;
  app.add_flag("--no-cudnn-legacy", no_legacy,
               "with --cudnn-engines: skip the legacy API's algorithms (where their times are known from another run "
               "and each call takes seconds)")
      ->needs(engines_opt);
  app.add_option("--cudnn-probe-budget", opts.engine_probe_budget_ms,
                 "with --cudnn-engines: ms of probe runs the engines of one point may spend; once spent, the "
                 "remaining engines are skipped (named in the log)")
      ->capture_default_str()
      ->needs(engines_opt);
  app.add_flag("--no-check", no_check, "skip the sampled FP64 accuracy check");
  app.add_option("--dtype", dtype, "data type: f32, or f16 (Flash-DWC-T, FP32 accumulation)")->capture_default_str();
  app.add_option("--bfc-accum", accum, "FP16 backward-filter accumulation: fp32 or ha (hybrid FP16/FP32)")
      ->capture_default_str();
  app.add_option("--kernel", opts.kernel,
                 "overrides of the kernel selection, key=value,... (e.g. fwd=gemv,gemv=16+ring or bfc_tile=2x13; "
                 "keys in kernels/dwconv/cuda/select.h); the CNN_DWCONV environment variable takes the same text");
  CLI::Option* self_opt =
      app.add_flag("--selftest", opts.selftest, "whole pipeline on 2x16x16x64, filters 3,7, 3 reps, in seconds");
  self_opt->excludes(maps_opt)->excludes(filters_opt)->excludes(reps_opt)->excludes(warmup_opt);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    exit_code = app.exit(e);
    return false;
  }
  opts.cudnn = !no_cudnn;
  opts.cudnn_legacy = !no_legacy;
  opts.check = !no_check;
  CNN_CHECK(dtype == "f32" || dtype == "f16", "--dtype: expected f32 or f16, got '", dtype, "'");
  CNN_CHECK(accum == "fp32" || accum == "ha", "--bfc-accum: expected fp32 or ha, got '", accum, "'");
  CNN_CHECK(accum == "fp32" || dtype == "f16", "--bfc-accum: ha needs --dtype f16 (FP32 data always accumulates in FP32)");
  opts.dtype = dtype == "f16" ? DType::f16 : DType::f32;
  opts.bfc_accum = accum == "ha" ? dwconv::BfcAccum::ha : dwconv::BfcAccum::fp32;
  if (opts.selftest) {
    maps = "2x16x16x64";
    filters = "3,7";
    opts.reps = 3;
    opts.warmup = 1;
  }
  CNN_CHECK(opts.stride >= 1, "--stride: expected >= 1, got ", opts.stride);
  CNN_CHECK(opts.reps >= 1, "--reps: expected >= 1, got ", opts.reps);
  CNN_CHECK(opts.warmup >= 0, "--warmup: expected >= 0, got ", opts.warmup);
  CNN_CHECK(opts.engine_probe_budget_ms > 0, "--cudnn-probe-budget: expected > 0 ms, got ",
            opts.engine_probe_budget_ms);
  dwconv::parse_overrides(opts.kernel, "--kernel");  // a bad key or value fails here, before any GPU work
  opts.ops = parse_ops(ops);
  opts.maps = parse_maps(maps);
  opts.filters = parse_filters(filters);
  return true;
}

}  // namespace cnn::bench
