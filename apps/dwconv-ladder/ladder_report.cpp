// Table, CSV and FP64 check of dwconv-ladder (see ladder_report.h).
#include "apps/dwconv-ladder/ladder_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <ostream>

#include "core/error.h"

namespace cnn::ladder {

double forward_bytes(const dwconv::DwconvParams& p, int elem_bytes) {
  return double(p.x_elems() + p.w_elems() + p.y_elems()) * elem_bytes;
}

void fill_roofline(LadderRow& row, const dwconv::DwconvParams& p, int elem_bytes) {
  row.bytes = forward_bytes(p, elem_bytes);
  row.intensity = p.flops() / row.bytes;
  row.tflops = p.flops() / (row.ms * 1e-3) / 1e12;
  row.gbps = row.bytes / (row.ms * 1e-3) / 1e9;
  row.frac_copy = row.copy_gbps > 0 ? row.gbps / row.copy_gbps : 0;
  row.frac_sgemm = row.sgemm_tflops > 0 ? row.tflops / row.sgemm_tflops : 0;
}

std::vector<double> forward_tolerance(const std::vector<double>& abs_ref, const std::vector<double>& ref, int taps,
                                      bool f16_output) {
  std::vector<double> tol(ref.size());
  const double accumulation = 2.0 * taps * std::ldexp(1.0, -24);
  for (size_t k = 0; k < ref.size(); ++k)
    tol[k] = accumulation * abs_ref[k] + (f16_output ? std::ldexp(std::abs(ref[k]), -11) : 0.0) + 1e-30;
  return tol;
}

void check_against(LadderRow& row, const std::vector<float>& got, const std::vector<double>& ref,
                   const std::vector<double>& tol) {
  CNN_CHECK(got.size() == ref.size() && tol.size() == ref.size(), "dwconv-ladder: check of ", row.name, ": ",
            got.size(), " outputs against ", ref.size(), " reference values");
  double mean_abs = 0;
  for (double v : ref) mean_abs += std::abs(v);
  mean_abs /= double(std::max<size_t>(ref.size(), 1));
  const double floor = 1e-3 * mean_abs;
  row.max_err_ratio = row.max_rel_err = 0;
  for (size_t k = 0; k < ref.size(); ++k) {
    const double err = std::abs(double(got[k]) - ref[k]);
    const double ratio = std::isnan(err) ? INFINITY : err / tol[k];
    row.max_err_ratio = std::max(row.max_err_ratio, ratio);
    row.max_rel_err = std::max(row.max_rel_err, std::isnan(err) ? INFINITY : err / std::max(std::abs(ref[k]), floor));
  }
  row.checked = true;
  if (row.max_err_ratio > 1.0 && row.error.empty())
    row.error = str_cat("FAILED the FP64 check: max error ", row.max_err_ratio, "x the tolerance");
}

void print_header(std::ostream& os, bool gpu) {
  os << std::left << std::setw(4) << "dev" << std::setw(6) << "F" << std::setw(7) << "rung" << std::setw(34) << "name"
     << std::setw(5) << "type" << std::right << std::setw(10) << "ms" << std::setw(9) << (gpu ? "TFLOP/s" : "GFLOP/s")
     << std::setw(9) << "MB" << std::setw(8) << "FLOP/B" << std::setw(9) << "GB/s" << std::setw(8) << "%copy"
     << std::setw(8) << "%sgemm" << std::setw(11) << "max rel"
     << "  check\n";
}

void print_row(std::ostream& os, const LadderRow& r) {
  os << std::left << std::setw(4) << r.device << std::setw(6) << str_cat(r.filter, "x", r.filter) << std::setw(7)
     << r.rung << std::setw(34) << r.name.substr(0, 33) << std::setw(5) << r.dtype << std::right;
  if (!r.error.empty() && !r.checked) {
    os << "  " << r.error << '\n';
    return;
  }
  const bool gpu = r.device == "gpu";
  os << std::fixed << std::setprecision(3) << std::setw(10) << r.ms << std::setprecision(2) << std::setw(9)
     << (gpu ? r.tflops : 1e3 * r.tflops) << std::setprecision(1) << std::setw(9) << r.bytes / 1e6
     << std::setprecision(2) << std::setw(8) << r.intensity << std::setprecision(gpu ? 0 : 2) << std::setw(9) << r.gbps
     << std::setprecision(1) << std::setw(8) << 100 * r.frac_copy << std::setw(8) << 100 * r.frac_sgemm
     << std::scientific << std::setprecision(2) << std::setw(11) << r.max_rel_err << std::defaultfloat << "  "
     << (r.error.empty() ? "ok" : r.error) << '\n';
}

void print_ceilings(std::ostream& os, const std::vector<LadderRow>& rows) {
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    if (it->ms <= 0 || it->dtype != "f32") continue;
    os << "ceilings (" << it->filter << "x" << it->filter
       << ", FP32 bytes and FLOPs): " << (it->device == "gpu" ? "device-to-device copy " : "parallel memcpy ")
       << it->copy_gbps << " GB/s, " << (it->device == "gpu" ? "cuBLAS" : "OpenBLAS") << " SGEMM " << it->sgemm_tflops
       << " TFLOP/s\n";
    return;
  }
}

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

}  // namespace

void write_csv(const std::string& path, const std::vector<LadderRow>& rows) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    CNN_CHECK(f.good(), "--out: cannot open '", tmp, "' for writing");
    f << "device,map,filter,rung,name,dtype,ms,reps,tflops,bytes,intensity,gbps,copy_gbps,frac_copy,sgemm_tflops,"
         "frac_sgemm,max_rel_err,max_err_ratio,error\n";
    f << std::setprecision(6);
    for (const LadderRow& r : rows) {
      const bool timed = r.ms > 0;
      auto num = [&](double v) { return timed ? str_cat(v) : std::string(); };
      f << r.device << ',' << r.map << ',' << r.filter << ',' << r.rung << ',' << csv_field(r.name) << ',' << r.dtype
        << ',' << num(r.ms) << ',' << r.reps << ',' << num(r.tflops) << ',' << num(r.bytes) << ',' << num(r.intensity)
        << ',' << num(r.gbps) << ',' << num(r.copy_gbps) << ',' << num(r.frac_copy) << ',' << num(r.sgemm_tflops) << ','
        << num(r.frac_sgemm) << ',' << (r.checked ? str_cat(r.max_rel_err) : "") << ','
        << (r.checked ? str_cat(r.max_err_ratio) : "") << ',' << csv_field(r.error) << '\n';
    }
    f.flush();
    CNN_CHECK(f.good(), "--out: write to '", tmp, "' failed");
  }
  CNN_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "--out: cannot rename '", tmp, "' to '", path, "'");
}

}  // namespace cnn::ladder
