// dwconv-bench: the paper's kernel protocol on this GPU. For each feature map (NHWC), odd square filter ('same'
// padding; stride 1 unless --stride) and op (fwd, bdc, bfc): Flash-DWC vs the fastest cuDNN algorithm, cuBLAS SGEMM
// and device copy, FP32 or FP16, with a sampled FP64 accuracy check. Protocol and columns: docs/perf/README.md.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <exception>
#include <iostream>
#include <optional>

#include "apps/dwconv-bench/bench_options.h"
#include "apps/dwconv-bench/bench_point.h"
#include "apps/dwconv-bench/report.h"
#include "apps/dwconv-bench/sampled_check.h"
#include "core/cuda_check.h"
#include "kernels/dwconv/cuda/select.h"

namespace cnn::bench {
namespace {

void require_device() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  CNN_CHECK(err == cudaSuccess && count > 0, "expected a CUDA device, got ",
            err == cudaSuccess ? std::string("none") : std::string(cudaGetErrorString(err)));
}

void print_header(const BenchOptions& opts) {
  int dev = 0, runtime = 0, driver = 0;
  CNN_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  CNN_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  CNN_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  CNN_CUDA_CHECK(cudaDriverGetVersion(&driver));
  std::cout << "device " << dev << ": " << prop.name << ", sm_" << prop.major << prop.minor << ", "
            << prop.multiProcessorCount << " SMs, L2 " << prop.l2CacheSize / (1 << 20) << " MiB, "
            << prop.totalGlobalMem / (size_t(1) << 30) << " GiB; CUDA runtime " << runtime << ", driver " << driver
            << ", cuDNN " << cudnnGetVersion() << '\n';
  std::cout << "protocol: " << (opts.dtype == DType::f16 ? "FP16 data, FP32 accumulation" : "FP32")
            << (opts.dtype == DType::f16 ? str_cat(" (bfc accumulation ", dwconv::bfc_accum_name(opts.bfc_accum), ")")
                                         : std::string())
            << ", stride " << opts.stride << ", 'same' padding, " << opts.warmup << " warm-up + median of " << opts.reps
            << " runs (CUDA events), inputs rotated past 2x L2; seeds x " << kXSeed << ", dy " << kDySeed << ", w "
            << kWSeed << "+F, samples " << kSampleSeed << "+F; check tolerance (max rel) " << check_tolerance()
            << (opts.dtype == DType::f16
                    ? str_cat(
                          " (f16 fwd/bdc: + ",
                          check_tolerance(opts.dtype, dwconv::DwconvOp::forward, opts.bfc_accum, 1) - check_tolerance(),
                          " per filter tap, tensor-core accumulation; bfc ",
                          check_tolerance(opts.dtype, dwconv::DwconvOp::backward_filter, opts.bfc_accum, 1), ")")
                    : std::string())
            << (opts.check ? "" : " (check off)")
            << (!opts.cudnn                               ? "; cuDNN off"
                : opts.cudnn_engines && opts.cudnn_legacy ? "; cuDNN legacy algorithms + backend engines"
                : opts.cudnn_engines                      ? "; cuDNN backend engines (legacy algorithms off)"
                                                          : "; cuDNN legacy algorithms")
            << '\n';
}

Row make_row(dwconv::DwconvOp op, const MapShape& map, int filter, int stride) {
  Row row;
  row.op = op_short_name(op);
  row.map = map.str();
  row.filter = filter;
  row.stride = stride;
  return row;
}

// Runs every (filter, op) of one map; the map's tensors are freed on return.
void run_map(const MapShape& map, const BenchContext& ctx, std::vector<Row>& rows) {
  std::optional<MapTensors> tensors;
  try {
    tensors.emplace(map, ctx.opts);
  } catch (const std::exception& e) {
    for (int f : ctx.opts.filters)
      for (dwconv::DwconvOp op : ctx.opts.ops) {
        rows.push_back(make_row(op, map, f, ctx.opts.stride));
        rows.back().error = e.what();
      }
    std::cout << "map " << map.str() << " FAILED: " << e.what() << '\n';
    return;
  }
  std::cout << "map " << map.str() << ": " << tensors->rotations << " rotated input copies\n";
  for (int filter : ctx.opts.filters) {
    const dwconv::DwconvParams p = same_padding_params(map, filter, ctx.opts.stride);
    std::optional<FilterTensors> filt;
    std::string filter_error;
    try {
      filt.emplace(p, ctx);
    } catch (const std::exception& e) {
      filter_error = e.what();
    }
    for (dwconv::DwconvOp op : ctx.opts.ops) {
      Row row = make_row(op, map, filter, ctx.opts.stride);
      std::cout << row.op << ' ' << row.map << " F=" << filter << '\n' << std::flush;
      if (!filter_error.empty()) {
        row.error = filter_error;
      } else {
        try {
          measure_point(op, p, *tensors, *filt, ctx, row);
        } catch (const std::exception& e) {
          row.error = e.what();
        }
      }
      if (!row.error.empty()) std::cout << "  FAILED: " << row.error << '\n';
      rows.push_back(std::move(row));
      // Rewritten (atomically) after every point: a run cut short, e.g. by a slow cuDNN algorithm meeting a
      // timeout, keeps a complete CSV of the points it finished.
      if (!ctx.opts.out_csv.empty()) write_csv(ctx.opts.out_csv, rows);
    }
  }
}

// A run passes when every point ran, every check of ours is within tolerance and (with cuDNN on) cuDNN had an
// algorithm, one of which passed the same check when it is on (none passing means a wrong descriptor or layout; a
// fast candidate failing alone is reported, with the fastest one that passed).
bool all_passed(const std::vector<Row>& rows, const BenchOptions& opts) {
  bool ok = true;
  for (const Row& r : rows) {
    const bool bad = !r.error.empty() || (r.has_check && !(r.max_rel_err <= r.tolerance)) ||
                     (r.has_cudnn_check && !r.has_cudnn_ok) || (opts.cudnn && r.error.empty() && !r.has_cudnn);
    if (bad) std::cout << "problem: " << r.op << ' ' << r.map << " F=" << r.filter << '\n';
    ok = ok && !bad;
  }
  return ok;
}

int run_bench(int argc, char** argv) {
  BenchOptions opts;
  int exit_code = 0;
  if (!parse_bench_options(argc, argv, opts, exit_code)) return exit_code;
  if (!opts.kernel.empty()) dwconv::set_overrides(dwconv::parse_overrides(opts.kernel, "--kernel"));
  require_device();
  print_header(opts);
  Stream stream;
  std::optional<CudnnHandle> cudnn;
  if (opts.cudnn) cudnn.emplace(stream.get());
  RooflineBaselines roofline(stream.get(), opts.warmup, opts.reps);
  const BenchContext ctx{opts, stream.get(), roofline, cudnn ? &*cudnn : nullptr};

  std::vector<Row> rows;
  for (const MapShape& map : opts.maps) run_map(map, ctx, rows);

  std::cout << '\n';
  print_table(std::cout, rows);
  print_summary(std::cout, rows);
  if (!opts.out_csv.empty()) {
    write_csv(opts.out_csv, rows);
    std::cout << "csv: " << opts.out_csv << '\n';
  }
  const bool ok = all_passed(rows, opts);
  if (opts.selftest) std::cout << "selftest: " << (ok ? "PASSED" : "FAILED") << '\n';
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace cnn::bench

int main(int argc, char** argv) {
  try {
    return cnn::bench::run_bench(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "dwconv-bench: " << e.what() << '\n';
    return 1;
  }
}
