// Results of a sweep: one Row per (op, map, filter); the end-of-run table, the per-op summary lines (geometric mean
// and minimum speedup over cuDNN, points slower than cuDNN) and the CSV, written atomically (temp file + rename).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace cnn::bench {

struct Row {
  std::string op;   // fwd, bdc, bfc
  std::string map;  // NxHxWxC
  std::string filter;  // "13" (square) or "51x5"
  int stride = 1;
  std::string error;  // non-empty: this point failed (message), numbers below are not valid
  double ms = 0;
  double tflops = 0;
  double gbps = 0;  // op bytes / time
  std::string path;
  // cuDNN; has_cudnn false with --no-cudnn or when no algorithm could run
  bool has_cudnn = false;
  double cudnn_ms = 0;
  std::string cudnn_algo;
  double speedup = 0;  // cudnn_ms / ms
  // ceilings
  int sgemm_m = 0;
  double sgemm_tflops = 0;
  double frac_sgemm = 0;
  double copy_gbps = 0;
  double frac_copy = 0;
  // accuracy; has_check false with --no-check
  bool has_check = false;
  double max_rel_err = 0;
  double mare = 0;  // mean relative error over the samples
  bool has_cudnn_check = false;
  double cudnn_max_rel_err = 0;
  double cudnn_mare = 0;
  // The fastest cuDNN candidate whose output passed the same FP64 check (with the check on; the candidates are
  // checked fastest first). Equal to the above when the winner passed; has_cudnn_ok false when none did.
  bool has_cudnn_ok = false;
  double cudnn_ok_ms = 0;
  std::string cudnn_ok_algo;
  double speedup_ok = 0;  // cudnn_ok_ms / ms
  double tolerance = 0;  // the max_rel limit of this point (check_tolerance for its dtype/op/accumulation)
  int reps = 0;
};

void print_table(std::ostream& os, const std::vector<Row>& rows);
// One "summary <op>: ..." line per op present in `rows`.
void print_summary(std::ostream& os, const std::vector<Row>& rows);
// Writes path.tmp, then renames it over `path`.
void write_csv(const std::string& path, const std::vector<Row>& rows);

}  // namespace cnn::bench
