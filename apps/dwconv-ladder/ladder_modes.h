// The two modes of dwconv-ladder: every GPU rung (teach/dwconv/ladder_cuda.h) then the production kernels and
// cuDNN on the GPU, or the CPU pair (naive loops, dwconv_forward_cpu) and the backward examples on the CPU.
#pragma once

#include <string>
#include <vector>

#include "apps/dwconv-bench/bench_options.h"
#include "apps/dwconv-ladder/ladder_report.h"

namespace cnn::ladder {

struct LadderOptions {
  bool gpu = true;
  bench::MapShape map;       // N x H x W x C
  std::vector<int> filters;  // odd square filters, 'same' padding, stride 1
  int reps = 20;             // timed runs at most (a slow rung gets fewer: see budget_ms)
  double budget_ms = 600;    // timed runs of one rung stop adding reps past this (at least 3 reps)
  bool cudnn = true;
  std::string out_csv;
};

// Rows are appended as they are measured (and printed). Throws cnn::Error when something fails outside a rung.
void run_gpu_ladder(const LadderOptions& opts, std::vector<LadderRow>& rows);
void run_cpu_ladder(const LadderOptions& opts, std::vector<LadderRow>& rows);

// Reps for a rung whose single run took probe_ms: as many as fit the budget, between 3 and max_reps.
int reps_for(double probe_ms, double budget_ms, int max_reps);

}  // namespace cnn::ladder
