// GPU mode of dwconv-ladder: per filter, the six rungs, the production kernels (FP32 and FP16) and cuDNN's fastest
// (backend engines and legacy algorithms, FP32 and FP16 data with FP32 compute), each timed with the dwconv-bench
// protocol (CUDA events, median; inputs rotated past 2x L2) and checked on image 0 against the FP64 reference.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "apps/dwconv-bench/cudnn_baseline.h"
#include "apps/dwconv-bench/cudnn_engines.h"
#include "apps/dwconv-bench/device_buffer.h"
#include "apps/dwconv-bench/roofline_baselines.h"
#include "apps/dwconv-bench/timing.h"
#include "apps/dwconv-ladder/ladder_modes.h"
#include "apps/dwconv-ladder/ladder_reference.h"
#include "core/cuda_check.h"
#include "kernels/dwconv/dwconv_cuda.h"
#include "teach/dwconv/ladder_cuda.h"

namespace cnn::ladder {
namespace {

using bench::DeviceBuffer;
using bench::RotatedTensor;
using dwconv::DwconvParams;

constexpr uint64_t kXSeed = uint64_t(1) << 32;  // dwconv-bench's seeds: the same inputs as its tables
constexpr uint64_t kWSeed = uint64_t(3) << 32;  // + filter size
constexpr double kCudnnProbeBudgetMs = 3000;    // probe time cuDNN's candidates of one (filter, dtype) may spend

// Everything one filter's rows share: the map's inputs of both dtypes and outputs (the same for every filter),
// the filter, the FP64 references of image 0.
struct FilterPoint {
  DwconvParams p;
  const RotatedTensor& x32;
  const RotatedTensor& x16;
  const DeviceBuffer& y32;
  const DeviceBuffer& y16;
  std::vector<float> w32_host, w16_host;
  DeviceBuffer w32, w16;
  ImageZeroReference ref32, ref16;
};

struct GpuContext {
  const LadderOptions& opts;
  cudaStream_t stream;
  bench::RooflineBaselines& roofline;
  const bench::CudnnHandle* cudnn;
};

std::vector<float> image_zero_output(const DeviceBuffer& y, const DwconvParams& p, bool f16) {
  std::vector<float> out;
  const int64_t count = p.y_elems() / p.n;
  if (f16)
    bench::copy_half_to_host(y, out, count);
  else
    bench::copy_to_host(y, out, count);
  return out;
}

// Times run (rotation index i), then reruns index 0 and checks image 0 of `y` against `ref`.
LadderRow measure(const GpuContext& ctx, const FilterPoint& fp, LadderRow row, const bench::RunFn& run, bool f16) {
  const double probe_ms = bench::time_once(run, 0, ctx.stream);
  const bench::Timing t = bench::time_runs(run, 1, reps_for(probe_ms, ctx.opts.budget_ms, ctx.opts.reps), ctx.stream);
  row.ms = t.median_ms;
  row.reps = t.reps;
  const int elem_bytes = f16 ? 2 : 4;
  row.copy_gbps = ctx.roofline.copy(size_t(forward_bytes(fp.p, elem_bytes))).gbps;
  row.sgemm_tflops = ctx.roofline.sgemm(fp.p.flops()).tflops;
  fill_roofline(row, fp.p, elem_bytes);
  run(0);
  CNN_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  const ImageZeroReference& ref = f16 ? fp.ref16 : fp.ref32;
  check_against(row, image_zero_output(f16 ? fp.y16 : fp.y32, fp.p, f16), ref.y, f16 ? ref.tol_f16 : ref.tol_f32);
  return row;
}

LadderRow base_row(const FilterPoint& fp, const LadderOptions& opts, std::string rung, std::string name, bool f16) {
  LadderRow row;
  row.device = "gpu";
  row.map = opts.map.str();
  row.filter = fp.p.fw;
  row.rung = std::move(rung);
  row.name = std::move(name);
  row.dtype = f16 ? "f16" : "f32";
  return row;
}

void add(std::vector<LadderRow>& rows, LadderRow row) {
  print_row(std::cout, row);
  std::cout.flush();
  rows.push_back(std::move(row));
}

void run_rungs(const GpuContext& ctx, const FilterPoint& fp, std::vector<LadderRow>& rows) {
  for (const teach::GpuRung& rung : teach::gpu_rungs()) {
    const bool f16 = rung.dtype == DType::f16;
    LadderRow row = base_row(fp, ctx.opts, std::to_string(rung.number), rung.name, f16);
    const void* x0 = f16 ? fp.x16.raw(0) : fp.x32.raw(0);
    const void* w = f16 ? fp.w16.get() : fp.w32.get();
    const void* y = f16 ? fp.y16.get() : fp.y32.get();
    row.error = rung.unsupported(fp.p, x0, w, y);
    if (!row.error.empty()) {
      add(rows, row);
      continue;
    }
    const bench::RunFn run = [&](int i) {
      if (f16)
        rung.run_f16(fp.x16.slice_f16(i), fp.w16.f16(), fp.y16.f16(), fp.p, ctx.stream);
      else
        rung.run_f32(fp.x32.slice(i), fp.w32.f32(), fp.y32.f32(), fp.p, ctx.stream);
    };
    add(rows, measure(ctx, fp, row, run, f16));
  }
}

void run_production(const GpuContext& ctx, const FilterPoint& fp, std::vector<LadderRow>& rows) {
  const bench::RunFn run32 = [&](int i) {
    dwconv::dwconv_forward_cuda(fp.x32.slice(i), fp.w32.f32(), nullptr, fp.y32.f32(), fp.p, ctx.stream);
  };
  add(rows,
      measure(ctx, fp, base_row(fp, ctx.opts, "prod", dwconv::dwconv_path_name(dwconv::DwconvOp::forward, fp.p), false),
              run32, false));
  const bench::RunFn run16 = [&](int i) {
    dwconv::dwconv_forward_cuda(fp.x16.slice_f16(i), fp.w16.f16(), nullptr, fp.y16.f16(), fp.p, ctx.stream);
  };
  const std::string path16 = dwconv::dwconv_path_name(dwconv::DwconvOp::forward, fp.p, DType::f16);
  add(rows, measure(ctx, fp, base_row(fp, ctx.opts, "prod", path16, true), run16, true));
}

// cuDNN's fastest candidate that passes the FP64 check, over its backend engines and legacy algorithms.
void run_cudnn(const GpuContext& ctx, const FilterPoint& fp, bool f16, std::vector<LadderRow>& rows) {
  const cudnnDataType_t data = f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  std::vector<float> w_cudnn = bench::to_cudnn_filter(f16 ? fp.w16_host : fp.w32_host, fp.p);
  DeviceBuffer w_dev(w_cudnn.size() * (f16 ? 2 : 4));
  if (f16) {
    const std::vector<uint16_t> bits = bench::round_to_half(w_cudnn);
    CNN_CUDA_CHECK(cudaMemcpy(w_dev.get(), bits.data(), w_dev.bytes(), cudaMemcpyHostToDevice));
  } else {
    CNN_CUDA_CHECK(cudaMemcpy(w_dev.get(), w_cudnn.data(), w_dev.bytes(), cudaMemcpyHostToDevice));
  }
  const DeviceBuffer& y = f16 ? fp.y16 : fp.y32;
  const bench::CudnnDepthwise conv(*ctx.cudnn, fp.p, data, CUDNN_DATA_FLOAT);
  std::unique_ptr<bench::CudnnEngines> engines;
  std::vector<bench::CudnnCandidate> candidates;
  try {
    engines =
        std::make_unique<bench::CudnnEngines>(*ctx.cudnn, fp.p, dwconv::DwconvOp::forward, data, CUDNN_DATA_FLOAT);
    candidates = engines->candidates(bench::cudnn_workspace_cap());
  } catch (const Error& e) {
    std::cout << "  cudnn engines: graph refused: " << e.what() << '\n';
  }
  for (bench::CudnnCandidate& c :
       bench::legacy_candidates(conv, dwconv::DwconvOp::forward, bench::cudnn_workspace_cap()))
    candidates.push_back(std::move(c));
  const bench::OperandsFn operands = [&](int i) {
    return bench::CudnnOperands{f16 ? fp.x16.raw(i) : fp.x32.raw(i), w_dev.get(), y.get()};
  };
  const ImageZeroReference& ref = f16 ? fp.ref16 : fp.ref32;
  const bench::CheckFn check = [&](const std::string& name) {
    LadderRow probe = base_row(fp, ctx.opts, "cudnn", name, f16);
    check_against(probe, image_zero_output(y, fp.p, f16), ref.y, f16 ? ref.tol_f16 : ref.tol_f32);
    return bench::CandidateCheck{probe.max_err_ratio <= 1.0, probe.max_rel_err, 0.0};
  };
  const bench::CudnnResult result =
      bench::bench_candidates(candidates, operands, 1, ctx.opts.reps, ctx.stream, 0, kCudnnProbeBudgetMs, check);
  const bench::TimedCandidate* best = nullptr;
  for (const bench::TimedCandidate& c : result.timed)
    if (c.checked && c.check.passed && (best == nullptr || c.timing.median_ms < best->timing.median_ms)) best = &c;
  LadderRow row = base_row(fp, ctx.opts, "cudnn", best ? best->name : "no candidate passed", f16);
  if (best == nullptr) {
    row.error = str_cat("no cuDNN candidate ran and passed the check (", result.timed.size(), " timed, ",
                        result.skipped.size(), " skipped)");
    add(rows, row);
    return;
  }
  row.ms = best->timing.median_ms;
  row.reps = best->timing.reps;
  row.copy_gbps = ctx.roofline.copy(size_t(forward_bytes(fp.p, f16 ? 2 : 4))).gbps;
  row.sgemm_tflops = ctx.roofline.sgemm(fp.p.flops()).tflops;
  fill_roofline(row, fp.p, f16 ? 2 : 4);
  row.checked = true;
  row.max_rel_err = best->check.max_rel;
  add(rows, row);
}

}  // namespace

void run_gpu_ladder(const LadderOptions& opts, std::vector<LadderRow>& rows) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  CNN_CHECK(err == cudaSuccess && count > 0, "dwconv-ladder --device gpu: expected a CUDA device, got ",
            err == cudaSuccess ? std::string("none") : std::string(cudaGetErrorString(err)),
            " (--device cpu runs the CPU rungs)");
  cudaDeviceProp prop{};
  CNN_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::cout << "device: " << prop.name << ", " << prop.multiProcessorCount << " SMs; map " << opts.map.str()
            << " (NHWC), 'same' padding, stride 1; median of up to " << opts.reps << " runs (CUDA events)\n";
  bench::Stream stream;
  bench::RooflineBaselines roofline(stream.get(), 2, opts.reps);
  std::unique_ptr<bench::CudnnHandle> cudnn;
  if (opts.cudnn) cudnn = std::make_unique<bench::CudnnHandle>(stream.get());
  const GpuContext ctx{opts, stream.get(), roofline, cudnn.get()};
  print_header(std::cout, true);
  const DwconvParams map = bench::same_padding_params(opts.map, 1, 1);  // 'same' padding keeps Y the size of X
  const RotatedTensor x32 =
      bench::make_rotated(map.x_elems(), bench::rotation_count(size_t(map.x_elems()) * 4), kXSeed);
  const RotatedTensor x16 =
      bench::make_rotated(map.x_elems(), bench::rotation_count(size_t(map.x_elems()) * 2), kXSeed, DType::f16);
  const DeviceBuffer y32(size_t(map.y_elems()) * 4), y16(size_t(map.y_elems()) * 2);
  for (int f : opts.filters) {
    FilterPoint fp{bench::same_padding_params(opts.map, f, 1), x32, x16, y32, y16, {}, {}, {}, {}, {}, {}};
    fp.w32 = bench::device_uniform(fp.p.w_elems(), kWSeed + uint64_t(f), &fp.w32_host);
    fp.w16 = bench::device_uniform(fp.p.w_elems(), kWSeed + uint64_t(f), &fp.w16_host, DType::f16);
    fp.ref32 = image_zero_reference(fp.x32.host0, fp.w32_host, fp.p);
    fp.ref16 = image_zero_reference(fp.x16.host0, fp.w16_host, fp.p);
    run_rungs(ctx, fp, rows);
    run_production(ctx, fp, rows);
    if (cudnn) {
      run_cudnn(ctx, fp, false, rows);
      run_cudnn(ctx, fp, true, rows);
    }
    if (!opts.out_csv.empty()) write_csv(opts.out_csv, rows);  // a run cut short keeps the filters done so far
  }
  print_ceilings(std::cout, rows);
}

}  // namespace cnn::ladder
