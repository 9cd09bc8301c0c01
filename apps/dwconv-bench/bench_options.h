// Command line of dwconv-bench: which ops, feature maps (N x H x W x C, NHWC) and square filters to sweep, and the
// timing protocol. Parsing and validation only; every bad value becomes a one-line cnn::Error naming the flag.
#pragma once

#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/dwconv/dwconv_cuda.h"

namespace cnn::bench {

struct MapShape {
  int n = 1, h = 1, w = 1, c = 1;
  std::string str() const;  // "128x128x128x128"
};

struct BenchOptions {
  std::vector<dwconv::DwconvOp> ops;
  std::vector<MapShape> maps;
  std::vector<int> filters;  // odd square filter sizes, 'same' padding F/2 on every side
  int stride = 1;            // on both axes; the output is ceil(H / stride) x ceil(W / stride)
  int reps = 20;             // timed runs per measurement; the median is reported
  int warmup = 5;            // untimed runs before them
  std::string out_csv;       // empty: no CSV
  bool cudnn = true;
  bool cudnn_engines = false;  // also every engine of cuDNN's backend (graph) API; the fastest of both is reported
  bool cudnn_legacy = true;    // the legacy API's algorithms (off only with engines on: --no-cudnn-legacy)
  double engine_probe_budget_ms = 20000;  // probe time the engines of one point may spend (slow ones take seconds)
  bool check = true;
  bool selftest = false;
  DType dtype = DType::f32;                           // f32 or f16 data (f16: FP32 accumulation)
  dwconv::BfcAccum bfc_accum = dwconv::BfcAccum::fp32;  // FP16 backward-filter accumulation
  std::string kernel;  // --kernel: overrides of the kernel selection, text form (kernels/dwconv/cuda/select.h)
};

// Parses argv; returns false when the process should exit with `exit_code` (help printed or a parse error).
bool parse_bench_options(int argc, char** argv, BenchOptions& opts, int& exit_code);

// Helpers exposed for the parser's error messages and the report.
std::vector<dwconv::DwconvOp> parse_ops(const std::string& list);
std::vector<MapShape> parse_maps(const std::string& list);
std::vector<int> parse_filters(const std::string& list);
const char* op_short_name(dwconv::DwconvOp op);  // "fwd", "bdc", "bfc"

// 'Same' padding (F/2 on every side) at the given stride on both axes: the problem every benchmark point runs.
dwconv::DwconvParams same_padding_params(const MapShape& m, int filter, int stride);

}  // namespace cnn::bench
