// Rows of dwconv-ladder: one per (filter, rung) on the GPU or the CPU, with the roofline quantities every rung is
// explained by (time, TFLOP/s, compulsory bytes, arithmetic intensity, fractions of the copy and SGEMM ceilings
// measured in the same run) and the FP64 check. Printed as a table; written as CSV (temp file + rename).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "kernels/dwconv/dwconv.h"

namespace cnn::ladder {

struct LadderRow {
  std::string device;  // "gpu" or "cpu"
  std::string map;     // NxHxWxC
  int filter = 0;
  std::string rung;   // "1".."6", "cpu-1", "cpu-2", "prod", "cudnn"
  std::string name;   // rung name, production path or cuDNN algorithm
  std::string dtype;  // "f32", "f16"
  std::string error;  // non-empty: skipped or failed (reason); the numbers are not valid
  double ms = 0;
  int reps = 0;
  double tflops = 0;
  double bytes = 0;          // compulsory traffic: X + W read once, Y written once, at the rung's element size
  double intensity = 0;      // FLOP per compulsory byte
  double gbps = 0;           // bytes / time (1e9)
  double copy_gbps = 0;      // copy ceiling: device-to-device (GPU) or parallel memcpy (CPU) moving `bytes`
  double frac_copy = 0;      // gbps / copy_gbps
  double sgemm_tflops = 0;   // SGEMM ceiling (cuBLAS / OpenBLAS, FP32) sized to the op's FLOPs
  double frac_sgemm = 0;     // tflops / sgemm_tflops
  double max_err_ratio = 0;  // max over checked outputs of |got - ref| / tolerance: <= 1 passes
  double max_rel_err = 0;    // max |got - ref| / max(|ref|, 1e-3 mean|ref|), for the table
  bool checked = false;
};

// Fills bytes, intensity, gbps, tflops and the two fractions from ms, the problem and the element size.
void fill_roofline(LadderRow& row, const dwconv::DwconvParams& p, int elem_bytes);
// Compulsory bytes of a forward: (X + W + Y) elements x elem_bytes.
double forward_bytes(const dwconv::DwconvParams& p, int elem_bytes);

// One table line, printed as soon as a rung is measured: TFLOP/s on the GPU, GFLOP/s on the CPU.
void print_row(std::ostream& os, const LadderRow& r);
void print_header(std::ostream& os, bool gpu);
// "ceilings: ..." with the copy and SGEMM ceilings of the last measured row (the largest filter).
void print_ceilings(std::ostream& os, const std::vector<LadderRow>& rows);
void write_csv(const std::string& path, const std::vector<LadderRow>& rows);  // path.tmp, then rename

// Error of `got` against the FP64 reference `ref` with per-element tolerance `tol` (see the callers for the
// bound); fills max_err_ratio, max_rel_err and checked.
void check_against(LadderRow& row, const std::vector<float>& got, const std::vector<double>& ref,
                   const std::vector<double>& tol);

// Per-element tolerance for an output computed from inputs rounded as the rung sees them: FP32 (or FP16
// products) summed in FP32 over `taps` terms, |err| <= 2 * taps * 2^-24 * sum|x w| (the recursive-summation
// bound with a factor 2 of margin), plus, for FP16 outputs, half an FP16 ulp of |y| (2^-11 |y|).
std::vector<double> forward_tolerance(const std::vector<double>& abs_ref, const std::vector<double>& ref, int taps,
                                      bool f16_output);

}  // namespace cnn::ladder
