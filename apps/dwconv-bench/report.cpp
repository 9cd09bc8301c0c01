// Table, summary and CSV output of dwconv-bench.
#include "apps/dwconv-bench/report.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "core/error.h"

namespace cnn::bench {
namespace {

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

std::string sci(double v) {
  std::ostringstream os;
  os << std::scientific << std::setprecision(2) << v;
  return os.str();
}

// CSV field: quoted when it holds a separator, quote or newline.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

}  // namespace

void print_table(std::ostream& os, const std::vector<Row>& rows) {
  os << std::left << std::setw(4) << "op" << ' ' << std::setw(16) << "map" << std::right << std::setw(5) << "F"
     << std::setw(10) << "ms" << std::setw(8) << "TFLOP/s" << std::setw(10) << "cudnn ms" << ' ' << std::left
     << std::setw(21) << "cudnn algo" << std::right << std::setw(8) << "speedup" << std::setw(7) << "%sgemm"
     << std::setw(7) << "%copy" << std::setw(10) << "rel err"
     << "  "
     << "path" << '\n';
  for (const Row& r : rows) {
    os << std::left << std::setw(4) << r.op << ' ' << std::setw(16) << r.map << std::right << std::setw(5) << r.filter;
    if (!r.error.empty()) {
      os << "  FAILED: " << r.error << '\n';
      continue;
    }
    os << std::setw(10) << fixed(r.ms, 3) << std::setw(8) << fixed(r.tflops, 2);
    if (r.has_cudnn) {
      os << std::setw(10) << fixed(r.cudnn_ms, 3) << ' ' << std::left << std::setw(21) << r.cudnn_algo << std::right
         << std::setw(8) << fixed(r.speedup, 2);
    } else {
      os << std::setw(10) << "-" << ' ' << std::left << std::setw(21) << "-" << std::right << std::setw(8) << "-";
    }
    os << std::setw(7) << fixed(100 * r.frac_sgemm, 1) << std::setw(7) << fixed(100 * r.frac_copy, 1) << std::setw(10)
       << (r.has_check ? sci(r.max_rel_err) : std::string("-")) << "  " << r.path << '\n';
  }
}

namespace {

// Geometric mean, minimum and the points below 1 of one speedup column over the rows of `op` that have it.
struct SpeedupStats {
  int compared = 0;
  double log_sum = 0, min = INFINITY;
  std::string slower;
  void add(const Row& r, double speedup) {
    ++compared;
    log_sum += std::log(speedup);
    min = std::min(min, speedup);
    if (speedup < 1.0) slower += str_cat(slower.empty() ? "" : " ", r.map, "/F", r.filter);
  }
  std::string text() const {
    return str_cat("geomean ", fixed(std::exp(log_sum / compared), 2), "x, min ", fixed(min, 2),
                   "x, slower than cuDNN: ", slower.empty() ? "none" : slower);
  }
};

}  // namespace

void print_summary(std::ostream& os, const std::vector<Row>& rows) {
  for (const char* op : {"fwd", "bdc", "bfc"}) {
    int points = 0, failed = 0;
    bool ok_differs = false;
    SpeedupStats best, accurate;
    for (const Row& r : rows) {
      if (r.op != op) continue;
      ++points;
      if (!r.error.empty()) {
        ++failed;
        continue;
      }
      if (r.has_cudnn) best.add(r, r.speedup);
      if (r.has_cudnn_ok) accurate.add(r, r.speedup_ok);
      ok_differs = ok_differs || (r.has_cudnn && (!r.has_cudnn_ok || r.cudnn_ok_algo != r.cudnn_algo));
    }
    if (points == 0) continue;
    os << "summary " << op << ": " << points << " points";
    if (failed > 0) os << ", " << failed << " FAILED";
    if (best.compared > 0) {
      os << ", speedup over cuDNN " << best.text();
      if (ok_differs && accurate.compared > 0)
        os << "; over the fastest cuDNN passing the FP64 check (" << accurate.compared << " points) "
           << accurate.text();
    } else {
      os << ", no cuDNN comparison";
    }
    os << '\n';
  }
}

void write_csv(const std::string& path, const std::vector<Row>& rows) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    CNN_CHECK(f.good(), "--out: cannot open '", tmp, "' for writing");
    f << "op,map,filter,ms,tflops,gbps,cudnn_ms,cudnn_algo,speedup,sgemm_m,sgemm_tflops,frac_sgemm,copy_gbps,"
         "frac_copy,max_rel_err,cudnn_max_rel_err,mare,cudnn_mare,path,reps,error,cudnn_ok_ms,cudnn_ok_algo,"
         "speedup_ok,stride\n";
    f << std::setprecision(6);
    for (const Row& r : rows) {
      const bool ok = r.error.empty();
      auto num = [&](bool valid, double v) { return valid ? str_cat(v) : std::string(); };
      f << r.op << ',' << r.map << ',' << r.filter << ',' << num(ok, r.ms) << ',' << num(ok, r.tflops) << ','
        << num(ok, r.gbps) << ',' << num(ok && r.has_cudnn, r.cudnn_ms) << ','
        << csv_field(ok && r.has_cudnn ? r.cudnn_algo : "") << ',' << num(ok && r.has_cudnn, r.speedup) << ','
        << num(ok, r.sgemm_m) << ',' << num(ok, r.sgemm_tflops) << ',' << num(ok, r.frac_sgemm) << ','
        << num(ok, r.copy_gbps) << ',' << num(ok, r.frac_copy) << ',' << num(ok && r.has_check, r.max_rel_err) << ','
        << num(ok && r.has_cudnn_check, r.cudnn_max_rel_err) << ',' << num(ok && r.has_check, r.mare) << ','
        << num(ok && r.has_cudnn_check, r.cudnn_mare) << ',' << csv_field(r.path) << ',' << r.reps << ','
        << csv_field(r.error) << ',' << num(ok && r.has_cudnn_ok, r.cudnn_ok_ms) << ','
        << csv_field(ok && r.has_cudnn_ok ? r.cudnn_ok_algo : "") << ',' << num(ok && r.has_cudnn_ok, r.speedup_ok)
        << ',' << r.stride << '\n';
    }
    f.flush();
    CNN_CHECK(f.good(), "--out: write to '", tmp, "' failed");
  }
  CNN_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "--out: cannot rename '", tmp, "' to '", path, "'");
}

}  // namespace cnn::bench
