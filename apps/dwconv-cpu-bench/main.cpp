// Times the FP32 CPU depthwise conv (NHWC): forward, backward-data, backward-filter and forward+backward (all three
// in a row), median of --reps runs after one warm-up, 'same'-style padding (F-1)/2 before, the rest after.
// Pair: bench/dwconv_cpu_torch.py (same shapes in PyTorch) and bench/dwconv_cpu_vs_torch.sh (side-by-side table).
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/error.h"
#include "kernels/dwconv/dwconv.h"
#include "kernels/dwconv/cpu/impl.h"

namespace {

using cnn::dwconv::DwconvParams;

// "N,H,W,C,F" (square filter) or "N,H,W,C,FH,FW[,S]" (stride S on both axes).
DwconvParams parse_shape(const std::string& text) {
  std::vector<int> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      v.push_back(std::stoi(item, &used));
      CNN_CHECK(used == item.size(), "--shapes: bad number '", item, "' in '", text, "'");
    } catch (const std::logic_error&) {
      CNN_CHECK(false, "--shapes: bad number '", item, "' in '", text, "'");
    }
  }
  CNN_CHECK(v.size() == 5 || v.size() == 6 || v.size() == 7, "--shapes: expected N,H,W,C,F or N,H,W,C,FH,FW[,S], got '",
            text, "'");
  DwconvParams p;
  p.n = v[0], p.ih = v[1], p.iw = v[2], p.c = v[3], p.fh = v[4], p.fw = v.size() >= 6 ? v[5] : v[4];
  p.stride_h = p.stride_w = v.size() == 7 ? v[6] : 1;
  p.pad_top = (p.fh - 1) / 2, p.pad_bottom = p.fh - 1 - p.pad_top;
  p.pad_left = (p.fw - 1) / 2, p.pad_right = p.fw - 1 - p.pad_left;
  p.validate("--shapes");
  return p;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

// Median wall-clock time, and median process CPU time per thread: on a shared, oversubscribed host the second
// stays close to the unloaded wall time while the first grows with the other jobs' share of the cores.
struct Timing {
  double wall_ms, cpu_ms;
};

template <class F>
Timing time_median(int reps, int threads, F&& f) {
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    const double c0 = process_cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back((process_cpu_ms() - c0) / threads);
  }
  return {median(wall), median(cpu)};
}

// A benchmark tensor: 64-byte-aligned host memory from the framework's allocator (as every cnn::Tensor, and as
// PyTorch's CPU tensors), optionally shifted by `offset` bytes to time misaligned placements.
class Buffer {
 public:
  Buffer(int64_t n, int offset) : bytes_(size_t(n) * sizeof(float) + size_t(offset)) {
    base_ = cnn::host_alloc(bytes_, "dwconv-cpu-bench");
    data_ = reinterpret_cast<float*>(static_cast<char*>(base_) + offset);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { cnn::host_free(base_, bytes_); }
  float* data() const { return data_; }

 private:
  size_t bytes_;
  void* base_;
  float* data_;
};

void fill_random(const Buffer& b, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t k = 0; k < n; ++k) b.data()[k] = dist(rng);
}

struct Result {
  DwconvParams p;
  Timing fwd, bdc, bfc, fwdbwd;
};

Result run_shape(const DwconvParams& p, int reps, int threads, int offset) {
  using namespace cnn::dwconv;
  const Buffer x(p.x_elems(), offset), w(p.w_elems(), offset), b(p.c, offset), dy(p.y_elems(), offset);
  const Buffer y(p.y_elems(), offset), dx(p.x_elems(), offset), dw(p.w_elems(), offset);
  fill_random(x, p.x_elems(), 1), fill_random(w, p.w_elems(), 2), fill_random(b, p.c, 3);
  fill_random(dy, p.y_elems(), 4);
  auto fwd = [&] { dwconv_forward_cpu(x.data(), w.data(), b.data(), y.data(), p); };
  auto bdc = [&] { dwconv_backward_data_cpu(dy.data(), w.data(), dx.data(), p); };
  auto bfc = [&] { dwconv_backward_filter_cpu(x.data(), dy.data(), dw.data(), p); };
  auto fwdbwd = [&] {
    fwd();
    bdc();
    bfc();
  };
  fwdbwd();  // warm-up: page faults, thread pool start
  Result r{p, {}, {}, {}, {}};
  r.fwd = time_median(reps, threads, fwd);
  r.bdc = time_median(reps, threads, bdc);
  r.bfc = time_median(reps, threads, bfc);
  r.fwdbwd = time_median(reps, threads, fwdbwd);
  return r;
}

std::string shape_label(const DwconvParams& p) {
  return cnn::str_cat(p.n, "x", p.ih, "x", p.iw, "x", p.c, " F", p.fh, "x", p.fw, " s", p.stride_h);
}

void print_results(const std::vector<Result>& results, int threads, int offset) {
  std::printf("dwconv CPU FP32 (NHWC, %s), %d threads, tensors at 64-byte alignment + %d bytes, GFLOP/s = "
              "2*N*OH*OW*C*FH*FW per op\n",
              cnn::dwconv::cpu::isa_name(cnn::dwconv::cpu::best_isa()), threads, offset);
  std::printf("wall-clock medians; 'cpu' = median process CPU time / threads (robust to other jobs on the host)\n");
  std::printf("%-26s %9s %8s %9s %9s %11s %8s %9s\n", "shape", "fwd ms", "GF/s", "bdc ms", "bfc ms", "fwd+bwd ms",
              "GF/s", "cpu fwd");
  for (const Result& r : results) {
    const double g = r.p.flops() * 1e-6;
    std::printf("%-26s %9.2f %8.1f %9.2f %9.2f %11.2f %8.1f %9.2f\n", shape_label(r.p).c_str(), r.fwd.wall_ms,
                g / r.fwd.wall_ms, r.bdc.wall_ms, r.bfc.wall_ms, r.fwdbwd.wall_ms, 3 * g / r.fwdbwd.wall_ms,
                r.fwd.cpu_ms);
  }
}

void write_csv(const std::string& path, const std::vector<Result>& results, int threads) {
  std::ofstream os(path);
  CNN_CHECK(os.good(), "--csv: cannot open '", path, "' for writing");
  os << "n,h,w,c,fh,fw,stride,threads,fwd_ms,fwd_gflops,fwdbwd_ms,fwdbwd_gflops,fwd_cpu_ms,fwdbwd_cpu_ms,bdc_ms,"
        "bfc_ms\n";
  for (const Result& r : results)
    os << r.p.n << ',' << r.p.ih << ',' << r.p.iw << ',' << r.p.c << ',' << r.p.fh << ',' << r.p.fw << ','
       << r.p.stride_h << ',' << threads << ',' << r.fwd.wall_ms << ',' << r.p.flops() / r.fwd.wall_ms * 1e-6 << ','
       << r.fwdbwd.wall_ms << ',' << 3 * r.p.flops() / r.fwdbwd.wall_ms * 1e-6 << ',' << r.fwd.cpu_ms << ','
       << r.fwdbwd.cpu_ms << ',' << r.bdc.wall_ms << ',' << r.bfc.wall_ms << '\n';
  CNN_CHECK(os.good(), "--csv: write to '", path, "' failed");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FP32 CPU depthwise conv benchmark: forward and forward+backward, median of reps"};
  std::vector<std::string> shapes = {"32,56,56,128,3", "32,56,56,128,7", "32,56,56,128,13", "32,56,56,128,31"};
  int threads = omp_get_max_threads(), reps = 5, offset = 0;
  std::string csv;
  app.add_option("--shapes", shapes, "N,H,W,C,F or N,H,W,C,FH,FW[,S]; default N=32 56x56 C=128, F 3/7/13/31");
  app.add_option("--threads", threads, "OpenMP threads")->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "timed repetitions per measurement (median)")->check(CLI::PositiveNumber);
  app.add_option("--offset", offset, "place every tensor this many bytes past 64-byte alignment (a multiple of 4)")
      ->check(CLI::Range(0, 60));
  app.add_option("--csv", csv, "also write the results to this CSV file");
  CLI11_PARSE(app, argc, argv);
  try {
    omp_set_num_threads(threads);
    std::vector<DwconvParams> params;
    for (const auto& s : shapes) params.push_back(parse_shape(s));
    std::vector<Result> results;
    CNN_CHECK(offset % 4 == 0, "--offset: expected a multiple of 4 (whole floats), got ", offset);
    for (const auto& p : params) results.push_back(run_shape(p, reps, threads, offset));
    print_results(results, threads, offset);
    if (!csv.empty()) write_csv(csv, results, threads);
  } catch (const std::exception& e) {
    std::cerr << "dwconv-cpu-bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
