// Measurement of one (op, map, filter) point of dwconv-bench: protocol in docs/perf/README.md.
#include "apps/dwconv-bench/bench_point.h"

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "apps/dwconv-bench/sampled_check.h"
#include "core/cuda_check.h"

namespace cnn::bench {
namespace {

using dwconv::DwconvOp;

bool wants(const BenchOptions& opts, DwconvOp op) {
  return std::find(opts.ops.begin(), opts.ops.end(), op) != opts.ops.end();
}

// Bytes an op must move at least: fwd X read + Y written, bdc dY read + dX written, bfc X + dY read; each is one
// X-sized plus one Y-sized tensor (the filter is negligible).
size_t op_bytes(const dwconv::DwconvParams& p) { return size_t(p.x_elems() + p.y_elems()) * sizeof(float); }

// The callbacks hold pointers to the tensors and a copy of the params, so they depend on nothing else.
RunFn flash_run(DwconvOp op, const dwconv::DwconvParams& p, const MapTensors& m, const FilterTensors& f,
                cudaStream_t stream) {
  const MapTensors* mt = &m;
  const FilterTensors* ft = &f;
  switch (op) {
    case DwconvOp::forward:
      return [p, mt, ft, stream](int i) {
        dwconv::dwconv_forward_cuda(mt->x->slice(i), ft->w.f32(), nullptr, mt->y.f32(), p, stream);
      };
    case DwconvOp::backward_data:
      return [p, mt, ft, stream](int i) {
        dwconv::dwconv_backward_data_cuda(mt->dy->slice(i), ft->w.f32(), mt->dx.f32(), p, stream);
      };
    case DwconvOp::backward_filter:
      return [p, mt, ft, stream](int i) {
        dwconv::dwconv_backward_filter_cuda(mt->x->slice(i), mt->dy->slice(i), ft->dw.f32(), p, stream);
      };
  }
  throw Error("dwconv-bench: unknown op");
}

OperandsFn cudnn_operands(DwconvOp op, const MapTensors& m, const FilterTensors& f) {
  const MapTensors* mt = &m;
  const FilterTensors* ft = &f;
  switch (op) {
    case DwconvOp::forward:
      return [mt, ft](int i) { return CudnnOperands{mt->x->slice(i), ft->w_cudnn.f32(), mt->y.f32()}; };
    case DwconvOp::backward_data:
      return [mt, ft](int i) { return CudnnOperands{mt->dy->slice(i), ft->w_cudnn.f32(), mt->dx.f32()}; };
    case DwconvOp::backward_filter:
      return [mt, ft](int i) { return CudnnOperands{mt->x->slice(i), mt->dy->slice(i), ft->dw.f32()}; };
  }
  throw Error("dwconv-bench: unknown op");
}

// Copies the op's output (as left by the last run on rotation 0) back and checks it against the FP64 formula.
// `cudnn_filter_layout`: a backward-filter result in cuDNN's (C, FH, FW) order.
CheckResult check_output(DwconvOp op, const dwconv::DwconvParams& p, const MapTensors& m, const FilterTensors& f,
                         bool cudnn_filter_layout) {
  std::vector<float> out;
  const uint64_t seed = kSampleSeed + uint64_t(p.fh);
  switch (op) {
    case DwconvOp::forward:
      copy_to_host(m.y, out, p.y_elems());
      return check_forward(m.x->host0, f.w_host, out, p, seed);
    case DwconvOp::backward_data:
      copy_to_host(m.dx, out, p.x_elems());
      return check_backward_data(m.dy->host0, f.w_host, out, p, seed);
    case DwconvOp::backward_filter:
      copy_to_host(f.dw, out, p.w_elems());
      if (cudnn_filter_layout) out = from_cudnn_filter(out, p);
      return check_backward_filter(m.x->host0, m.dy->host0, out, p, seed);
  }
  throw Error("dwconv-bench: unknown op");
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& it : items) s += (s.empty() ? "" : ", ") + it;
  return s.empty() ? "none" : s;
}

void measure_cudnn(DwconvOp op, const dwconv::DwconvParams& p, const MapTensors& m, const FilterTensors& f,
                   const BenchContext& ctx, Row& row) {
  const OperandsFn operands = cudnn_operands(op, m, f);
  const CudnnResult r = bench_cudnn(*f.conv, op, operands, ctx.opts.warmup, ctx.opts.reps, ctx.stream);
  std::cout << "  cudnn timed: " << join(r.timed) << "; skipped: " << join(r.skipped) << '\n';
  if (!r.found) return;
  row.has_cudnn = true;
  row.cudnn_ms = r.best.median_ms;
  row.cudnn_algo = r.best_name;
  row.speedup = r.best.median_ms / row.ms;
  if (!ctx.opts.check) return;
  // Checks the winner computed the same convolution (catches a wrong descriptor or filter layout).
  DeviceBuffer workspace(r.best_workspace);
  CNN_CUDNN_CHECK(f.conv->run(op, r.best_id, operands(0), workspace.get(), r.best_workspace));
  CNN_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  const CheckResult c = check_output(op, p, m, f, true);
  row.has_cudnn_check = true;
  row.cudnn_max_rel_err = c.max_rel;
  if (c.max_rel > check_tolerance())
    std::cout << "  CHECK FAILED (cuDNN " << r.best_name << "): max rel err " << c.max_rel << " at " << c.worst << '\n';
}

}  // namespace

MapTensors::MapTensors(const MapShape& map, const BenchOptions& opts) {
  const int64_t elems = int64_t(map.n) * map.h * map.w * map.c;
  rotations = rotation_count(size_t(elems) * sizeof(float));
  const bool fwd = wants(opts, DwconvOp::forward), bdc = wants(opts, DwconvOp::backward_data),
             bfc = wants(opts, DwconvOp::backward_filter);
  if (fwd || bfc) x.emplace(make_rotated(elems, rotations, kXSeed));
  if (bdc || bfc) dy.emplace(make_rotated(elems, rotations, kDySeed));
  if (!opts.check) {  // host copies only serve the accuracy check
    if (x) x->host0 = {};
    if (dy) dy->host0 = {};
  }
  if (fwd) y = DeviceBuffer(size_t(elems) * sizeof(float));
  if (bdc) dx = DeviceBuffer(size_t(elems) * sizeof(float));
}

FilterTensors::FilterTensors(const dwconv::DwconvParams& p, const BenchContext& ctx) {
  w = device_uniform(p.w_elems(), kWSeed + uint64_t(p.fh), &w_host);
  dw = DeviceBuffer(size_t(p.w_elems()) * sizeof(float));
  if (ctx.cudnn != nullptr) {
    const std::vector<float> wc = to_cudnn_filter(w_host, p);
    w_cudnn = DeviceBuffer(wc.size() * sizeof(float));
    CNN_CUDA_CHECK(cudaMemcpy(w_cudnn.get(), wc.data(), w_cudnn.bytes(), cudaMemcpyHostToDevice));
    CNN_CUDA_CHECK(cudaDeviceSynchronize());
    conv = std::make_unique<CudnnDepthwise>(*ctx.cudnn, p);
  }
}

void measure_point(DwconvOp op, const dwconv::DwconvParams& p, MapTensors& m, FilterTensors& f, const BenchContext& ctx,
                   Row& row) {
  // 'same' padding with an odd filter keeps the output extent, so Y / dY share X's buffers' shape.
  CNN_CHECK(p.oh() == p.ih && p.ow() == p.iw, "dwconv-bench: expected OH = IH and OW = IW, got ", p.str());
  row.reps = ctx.opts.reps;
  row.path = dwconv::dwconv_path_name(op, p);
  const RunFn run = flash_run(op, p, m, f, ctx.stream);
  const Timing t = time_runs(run, ctx.opts.warmup, ctx.opts.reps, ctx.stream);
  row.ms = t.median_ms;
  row.tflops = p.flops() / (t.median_ms * 1e-3) / 1e12;
  const size_t bytes = op_bytes(p);
  row.gbps = double(bytes) / (t.median_ms * 1e-3) / 1e9;

  const GemmPoint& g = ctx.roofline.sgemm(p.flops());
  row.sgemm_m = g.m;
  row.sgemm_tflops = g.tflops;
  row.frac_sgemm = row.tflops / g.tflops;
  const CopyPoint& cp = ctx.roofline.copy(bytes);
  row.copy_gbps = cp.gbps;
  row.frac_copy = row.gbps / cp.gbps;
  std::ostringstream line;  // local stream: the fixed format must not leak into std::cout
  line << std::fixed << std::setprecision(3) << "  flash " << row.ms << " ms, " << row.tflops << " TFLOP/s, "
       << row.gbps << " GB/s (" << row.path << "); sgemm m=" << g.m << " " << g.tflops << " TFLOP/s; copy " << cp.gbps
       << " GB/s\n";
  std::cout << line.str();

  if (ctx.opts.check) {
    run(0);  // rotation 0 is the copy whose host values the reference reads
    CNN_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    const CheckResult c = check_output(op, p, m, f, false);
    row.has_check = true;
    row.max_rel_err = c.max_rel;
    std::cout << "  check: " << c.samples << " samples, max rel err " << c.max_rel << ", max abs err " << c.max_abs
              << (c.max_rel > check_tolerance() ? str_cat("  CHECK FAILED at ", c.worst) : std::string()) << '\n';
  }
  if (f.conv) measure_cudnn(op, p, m, f, ctx, row);
}

}  // namespace cnn::bench
