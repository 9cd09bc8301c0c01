// CPU mode of dwconv-ladder: the CPU pair (teach forward_naive_cpu, then the vectorized backend dwconv_forward_cpu)
// per filter, timed (std::chrono, fastest run) and checked against the FP64 reference of the whole batch, with the
// copy (parallel memcpy) and SGEMM (OpenBLAS) ceilings measured in the same run; then the backward examples of the
// tutorial: backward-data as a flipped forward, backward-filter split and accumulated in FP32, FP16 and hybrid.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>

#include "apps/dwconv-bench/device_buffer.h"
#include "apps/dwconv-bench/roofline_baselines.h"
#include "apps/dwconv-ladder/ladder_modes.h"
#include "apps/dwconv-ladder/ladder_reference.h"
#include "core/error.h"
#include "kernels/matmul/gemm.h"
#include "teach/dwconv/ladder.h"

namespace cnn::ladder {
namespace {

using dwconv::DwconvParams;

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One untimed run, then runs until the budget is spent (3 at least, max_reps at most); the fastest. On a CPU shared
// with other work the median carries their load; the fastest run is the one least disturbed.
double time_best_ms(const std::function<void()>& run, const LadderOptions& opts, int& reps) {
  double t0 = now_ms();
  run();
  reps = reps_for(now_ms() - t0, opts.budget_ms, opts.reps);
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    t0 = now_ms();
    run();
    ms.push_back(now_ms() - t0);
  }
  return *std::min_element(ms.begin(), ms.end());
}

// Ceilings on this machine, cached per size: every thread copying its slice of `bytes / 2`, and OpenBLAS SGEMM.
struct CpuCeilings {
  const LadderOptions& opts;
  std::map<size_t, double> copy_gbps;
  std::map<int, double> sgemm_tflops;

  double copy(size_t moved_bytes) {
    auto it = copy_gbps.find(moved_bytes);
    if (it != copy_gbps.end()) return it->second;
    const size_t n = moved_bytes / 2 / sizeof(float);
    std::vector<float> src(n, 1.f), dst(n);
    const auto run = [&] {
#pragma omp parallel
      {
        const size_t t = size_t(omp_get_thread_num()), k = size_t(omp_get_num_threads());
        std::memcpy(dst.data() + n * t / k, src.data() + n * t / k, (n * (t + 1) / k - n * t / k) * sizeof(float));
      }
    };
    int reps = 0;
    const double ms = time_best_ms(run, opts, reps);
    return copy_gbps[moved_bytes] = double(2 * n * sizeof(float)) / (ms * 1e-3) / 1e9;
  }

  double sgemm(double flops) {
    const int m = bench::RooflineBaselines::gemm_size_for(flops);
    auto it = sgemm_tflops.find(m);
    if (it != sgemm_tflops.end()) return it->second;
    const std::vector<float> a = bench::host_uniform(int64_t(m) * m, 11), b = bench::host_uniform(int64_t(m) * m, 12);
    std::vector<float> c(size_t(m) * m);
    kernels::GemmParams g;
    g.m = g.n = g.k = g.lda = g.ldb = g.ldc = m;
    int reps = 0;
    const double ms = time_best_ms([&] { kernels::gemm_cpu(a.data(), b.data(), c.data(), g); }, opts, reps);
    return sgemm_tflops[m] = 2.0 * m * m * double(m) / (ms * 1e-3) / 1e12;
  }
};

void cpu_forward_rows(const LadderOptions& opts, CpuCeilings& ceilings, std::vector<LadderRow>& rows) {
  for (int f : opts.filters) {
    const DwconvParams p = bench::same_padding_params(opts.map, f, 1);
    const std::vector<float> x = bench::host_uniform(p.x_elems(), 1),
                             w = bench::host_uniform(p.w_elems(), 3 + uint64_t(f));
    // The whole batch is checked: image by image against the FP64 reference of that image.
    std::vector<ImageZeroReference> refs;
    const int64_t image = p.x_elems() / p.n;
    for (int n = 0; n < p.n; ++n)
      refs.push_back(
          image_zero_reference(std::vector<float>(x.begin() + n * image, x.begin() + (n + 1) * image), w, p));
    std::vector<double> ref, tol;
    for (const auto& r : refs) {
      ref.insert(ref.end(), r.y.begin(), r.y.end());
      tol.insert(tol.end(), r.tol_f32.begin(), r.tol_f32.end());
    }
    const std::pair<const char*, std::function<void(float*)>> rungs[] = {
        {"naive loops", [&](float* y) { teach::forward_naive_cpu(x.data(), w.data(), y, p); }},
        {"dwconv_forward_cpu", [&](float* y) { dwconv::dwconv_forward_cpu(x.data(), w.data(), nullptr, y, p); }},
    };
    int number = 1;
    for (const auto& [name, fn] : rungs) {
      std::vector<float> y(size_t(p.y_elems()));
      LadderRow row;
      row.device = "cpu", row.map = opts.map.str(), row.filter = f, row.rung = str_cat("cpu-", number++);
      row.name = name, row.dtype = "f32";
      row.ms = time_best_ms([&] { fn(y.data()); }, opts, row.reps);
      row.copy_gbps = ceilings.copy(size_t(p.x_elems() + p.y_elems()) * 4);  // one copy size for every filter
      row.sgemm_tflops = ceilings.sgemm(p.flops());
      fill_roofline(row, p, 4);
      check_against(row, y, ref, tol);
      print_row(std::cout, row);
      rows.push_back(row);
    }
    if (!opts.out_csv.empty()) write_csv(opts.out_csv, rows);  // a run cut short keeps the filters done so far
  }
}

double max_rel_error(const std::vector<float>& got, const std::vector<double>& ref) {
  double scale = 0, worst = 0;
  for (double v : ref) scale = std::max(scale, std::abs(v));
  for (size_t k = 0; k < ref.size(); ++k) worst = std::max(worst, std::abs(double(got[k]) - ref[k]) / scale);
  return worst;
}

// The tutorial's backward examples, small enough to follow by hand.
void backward_examples() {
  DwconvParams p;  // backward-data: 2 x 17 x 17 x 8, 7x7 filter, asymmetric padding
  p.n = 2, p.ih = p.iw = 17, p.c = 8, p.fh = p.fw = 7, p.pad_top = 3, p.pad_bottom = 2, p.pad_left = 1, p.pad_right = 4;
  const std::vector<float> dy = bench::host_uniform(p.y_elems(), 21), w = bench::host_uniform(p.w_elems(), 22);
  std::vector<float> dx(size_t(p.x_elems()));
  teach::backward_data_as_flipped_forward(dy.data(), w.data(), dx.data(), p);
  std::vector<double> ref(dx.size());
  const std::vector<double> dyd(dy.begin(), dy.end()), wd(w.begin(), w.end());
  dwconv::dwconv_backward_data_reference(dyd.data(), wd.data(), ref.data(), p);
  const DwconvParams f = teach::flipped_forward_params(p);
  std::cout << "backward-data as a flipped forward: " << p.str() << " -> forward of dY with the filter turned 180"
            << " degrees, padding (" << f.pad_top << "," << f.pad_bottom << "," << f.pad_left << "," << f.pad_right
            << "): max error " << max_rel_error(dx, ref) << " of max |dX|\n";

  DwconvParams q;  // backward-filter: one channel, 16 images of 32 x 32, 3x3: 16384 products per tap
  q.n = 16, q.ih = q.iw = 32, q.c = 1, q.fh = q.fw = 3, q.pad_top = q.pad_bottom = q.pad_left = q.pad_right = 1;
  std::vector<float> x = bench::host_uniform(q.x_elems(), 31), g = bench::host_uniform(q.y_elems(), 32);
  for (float& v : x) v = half_bits_to_float(float_to_half_bits(v));  // FP16 data, as in mixed-precision training
  for (float& v : g) v = half_bits_to_float(float_to_half_bits(v));
  std::vector<double> dw_ref(size_t(q.w_elems()));
  const std::vector<double> xd(x.begin(), x.end()), gd(g.begin(), g.end());
  dwconv::dwconv_backward_filter_reference(xd.data(), gd.data(), dw_ref.data(), q);
  std::cout << "backward-filter: " << q.str() << ", " << int64_t(q.n) * q.oh() * q.ow()
            << " products per tap; max error of dW over max |dW| (FP64 reference):\n";
  for (int chunks : {1, 16, 512}) {
    const int rows_per_chunk = q.n * q.oh() / chunks;
    std::cout << "  " << chunks << (chunks > 1 ? " chunks" : " chunk") << " of " << rows_per_chunk
              << (rows_per_chunk > 1 ? " rows" : " row") << ":";
    for (teach::Accumulation a : {teach::Accumulation::fp32, teach::Accumulation::fp16, teach::Accumulation::hybrid}) {
      std::vector<float> dw(size_t(q.w_elems()));
      teach::backward_filter_split(x.data(), g.data(), dw.data(), q, chunks, a);
      std::cout << "  " << teach::accumulation_name(a) << " " << max_rel_error(dw, dw_ref);
    }
    std::cout << '\n';
  }
}

}  // namespace

int reps_for(double probe_ms, double budget_ms, int max_reps) {
  const double fit = probe_ms > 0 ? budget_ms / probe_ms : max_reps;
  return int(std::clamp(fit, 3.0, double(max_reps)));
}

void run_cpu_ladder(const LadderOptions& opts, std::vector<LadderRow>& rows) {
  std::cout << "cpu: " << omp_get_max_threads() << " OpenMP threads; map " << opts.map.str()
            << " (NHWC), 'same' padding, stride 1; fastest of up to " << opts.reps << " runs\n";
  CpuCeilings ceilings{opts, {}, {}};
  print_header(std::cout, false);
  cpu_forward_rows(opts, ceilings, rows);
  print_ceilings(std::cout, rows);
  backward_examples();
}

}  // namespace cnn::ladder
