// Measurement of one (op, map, filter) point of dwconv-bench: protocol in docs/perf/README.md.
#include "apps/dwconv-bench/bench_point.h"

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <utility>

#include "apps/dwconv-bench/cudnn_engines.h"
#include "apps/dwconv-bench/sampled_check.h"
#include "core/cuda_check.h"

namespace cnn::bench {
namespace {

using dwconv::DwconvOp;

bool wants(const BenchOptions& opts, DwconvOp op) {
  return std::find(opts.ops.begin(), opts.ops.end(), op) != opts.ops.end();
}

bool is_f16(const BenchOptions& opts) { return opts.dtype == DType::f16; }
size_t elem_bytes(const BenchOptions& opts) { return is_f16(opts) ? 2 : sizeof(float); }

// Bytes an op must move at least: fwd X read + Y written, bdc dY read + dX written, bfc X + dY read; each is one
// X-sized plus one Y-sized tensor (the filter is negligible).
size_t op_bytes(const dwconv::DwconvParams& p, const BenchOptions& opts) {
  return size_t(p.x_elems() + p.y_elems()) * elem_bytes(opts);
}

// The callbacks hold pointers to the tensors and a copy of the params, so they depend on nothing else.
RunFn flash_run_f16(DwconvOp op, const dwconv::DwconvParams& p, const MapTensors& m, const FilterTensors& f,
                    dwconv::BfcAccum accum, cudaStream_t stream, const dwconv::DwconvScratch& scratch) {
  const MapTensors* mt = &m;
  const FilterTensors* ft = &f;
  switch (op) {
    case DwconvOp::forward:
      return [p, mt, ft, stream, scratch](int i) {
        dwconv::dwconv_forward_cuda(mt->x->slice_f16(i), ft->w.f16(), nullptr, mt->y.f16(), p, stream, scratch);
      };
    case DwconvOp::backward_data:
      return [p, mt, ft, stream, scratch](int i) {
        dwconv::dwconv_backward_data_cuda(mt->dy->slice_f16(i), ft->w.f16(), mt->dx.f16(), p, stream, scratch);
      };
    case DwconvOp::backward_filter:
      return [p, mt, ft, accum, stream, scratch](int i) {
        dwconv::dwconv_backward_filter_cuda(mt->x->slice_f16(i), mt->dy->slice_f16(i), ft->dw.f32(), p, accum, stream,
                                            scratch);
      };
  }
  throw Error("dwconv-bench: unknown op");
}

RunFn flash_run(DwconvOp op, const dwconv::DwconvParams& p, const MapTensors& m, const FilterTensors& f,
                const BenchOptions& opts, cudaStream_t stream, const dwconv::DwconvScratch& scratch) {
  if (is_f16(opts)) return flash_run_f16(op, p, m, f, opts.bfc_accum, stream, scratch);
  const MapTensors* mt = &m;
  const FilterTensors* ft = &f;
  switch (op) {
    case DwconvOp::forward:
      return [p, mt, ft, stream, scratch](int i) {
        dwconv::dwconv_forward_cuda(mt->x->slice(i), ft->w.f32(), nullptr, mt->y.f32(), p, stream, scratch);
      };
    case DwconvOp::backward_data:
      return [p, mt, ft, stream, scratch](int i) {
        dwconv::dwconv_backward_data_cuda(mt->dy->slice(i), ft->w.f32(), mt->dx.f32(), p, stream, scratch);
      };
    case DwconvOp::backward_filter:
      return [p, mt, ft, stream, scratch](int i) {
        dwconv::dwconv_backward_filter_cuda(mt->x->slice(i), mt->dy->slice(i), ft->dw.f32(), p, stream, scratch);
      };
  }
  throw Error("dwconv-bench: unknown op");
}

OperandsFn cudnn_operands(DwconvOp op, const MapTensors& m, const FilterTensors& f, bool f16) {
  const MapTensors* mt = &m;
  const FilterTensors* ft = &f;
  switch (op) {
    case DwconvOp::forward:
      return [mt, ft](int i) { return CudnnOperands{mt->x->raw(i), ft->w_cudnn.get(), mt->y.get()}; };
    case DwconvOp::backward_data:
      return [mt, ft](int i) { return CudnnOperands{mt->dy->raw(i), ft->w_cudnn.get(), mt->dx.get()}; };
    case DwconvOp::backward_filter:
      return [mt, ft, f16](int i) {
        return CudnnOperands{mt->x->raw(i), mt->dy->raw(i), f16 ? ft->dw_cudnn.get() : ft->dw.get()};
      };
  }
  throw Error("dwconv-bench: unknown op");
}

// Copies the op's output (as left by the last run on rotation 0) back and checks it against the FP64 formula.
// `cudnn_filter_layout`: a backward-filter result in cuDNN's (C, FH, FW) order.
// f16: outputs are FP16 except Flash-DWC's FP32 dW; cuDNN's FP16 dW is in dw_cudnn.
CheckResult check_output(DwconvOp op, const dwconv::DwconvParams& p, const MapTensors& m, const FilterTensors& f,
                         bool cudnn_filter_layout, bool f16) {
  std::vector<float> out;
  const uint64_t seed = kSampleSeed + uint64_t(p.fh);
  auto fetch = [&](const DeviceBuffer& b, int64_t n, bool half) {
    if (half)
      copy_half_to_host(b, out, n);
    else
      copy_to_host(b, out, n);
  };
  switch (op) {
    case DwconvOp::forward:
      fetch(m.y, p.y_elems(), f16);
      return check_forward(m.x->host0, f.w_host, out, p, seed);
    case DwconvOp::backward_data:
      fetch(m.dx, p.x_elems(), f16);
      return check_backward_data(m.dy->host0, f.w_host, out, p, seed);
    case DwconvOp::backward_filter:
      if (f16 && cudnn_filter_layout)
        fetch(f.dw_cudnn, p.w_elems(), true);
      else
        fetch(f.dw, p.w_elems(), false);
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

std::string join_timed(const std::vector<TimedCandidate>& timed) {
  std::vector<std::string> items;
  for (const TimedCandidate& c : timed) items.push_back(timed_text(c));
  return join(items);
}

// The log's name for an accumulation mode: FP16 data runs cuDNN in both, FP32 data in FP32 only (no label).
const char* accumulation_label(bool f16, bool half_accumulation) {
  return !f16 ? "" : half_accumulation ? " (fp16 accumulation)" : " (fp32 accumulation)";
}

// Every timed candidate of every source, named as the report shows it ("graph engN+rtc/f32acc", "ALGO_1/f16acc").
struct Candidates {
  std::vector<TimedCandidate> all;
  void add(CudnnResult&& r, const std::string& prefix, const char* tag) {
    for (TimedCandidate& c : r.timed) {
      c.name = str_cat(prefix, c.name, tag);
      all.push_back(std::move(c));
    }
  }
  // The fastest candidate (accurate_only: whose output passed the check), or null.
  const TimedCandidate* best(bool accurate_only) const {
    const TimedCandidate* b = nullptr;
    for (const TimedCandidate& c : all)
      if ((!accurate_only || (c.checked && c.check.passed)) && (!b || c.timing.median_ms < b->timing.median_ms))
        b = &c;
    return b;
  }
  // The pruning reference for the next source: the fastest accurate time (any time with the check off), 0 if none.
  double reference_ms(bool checking) const {
    const TimedCandidate* b = best(checking);
    return b ? b->timing.median_ms : 0;
  }
};

void measure_cudnn(DwconvOp op, const dwconv::DwconvParams& p, const MapTensors& m, const FilterTensors& f,
                   const BenchContext& ctx, Row& row) {
  const bool f16 = is_f16(ctx.opts);
  const OperandsFn operands = cudnn_operands(op, m, f, f16);
  const bool checking = ctx.opts.check;
  // A candidate's output (it has just run on rotation 0) against the FP64 reference, as the point checks ours.
  const CheckFn check = [&](const std::string& name) {
    const CheckResult r = check_output(op, p, m, f, true, f16);
    const CandidateCheck c{r.max_rel <= row.tolerance, r.max_rel, r.mare};
    if (!c.passed)
      std::cout << "  check failed (cuDNN " << name << "): max rel err " << r.max_rel << ", MARE " << r.mare << " at "
                << r.worst << '\n';
    return c;
  };
  const CheckFn no_check;
  Candidates cands;
  // Backend-API engines first (runtime-compiled ones lead), per accumulation type, so that the legacy algorithms
  // after them are pruned against the best engine. Their plans must outlive the reruns of the checks.
  std::vector<std::unique_ptr<CudnnEngines>> engines;
  if (ctx.opts.cudnn_engines) {
    const cudnnDataType_t data = f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    std::vector<std::pair<cudnnDataType_t, const char*>> computes = {{CUDNN_DATA_FLOAT, f16 ? "/f32acc" : ""}};
    if (f16) computes.insert(computes.begin(), {CUDNN_DATA_HALF, "/f16acc"});
    for (const auto& [compute, tag] : computes) {
      const std::string label = str_cat("  cudnn engines", accumulation_label(f16, compute == CUDNN_DATA_HALF));
      try {
        engines.push_back(std::make_unique<CudnnEngines>(*ctx.cudnn, p, op, data, compute));
      } catch (const Error& e) {
        std::cout << label << ": graph refused: " << e.what() << '\n';
        continue;
      }
      CudnnResult re = bench_candidates(engines.back()->candidates(cudnn_workspace_cap()), operands, ctx.opts.warmup,
                                        ctx.opts.reps, ctx.stream, cands.reference_ms(checking),
                                        ctx.opts.engine_probe_budget_ms, checking ? check : no_check);
      std::cout << label << " timed: " << join_timed(re.timed) << "; skipped: " << join(re.skipped) << '\n';
      cands.add(std::move(re), "graph ", tag);
    }
  }
  if (ctx.opts.cudnn_legacy) {
    // The protocol's FP16 baseline is the best of FP16- and FP32-accumulating cuDNN.
    const std::vector<std::pair<const CudnnDepthwise*, const char*>> convs =
        f16 ? std::vector<std::pair<const CudnnDepthwise*, const char*>>{{f.conv.get(), "/f16acc"},
                                                                          {f.conv_f32acc.get(), "/f32acc"}}
            : std::vector<std::pair<const CudnnDepthwise*, const char*>>{{f.conv.get(), ""}};
    for (const auto& [conv, tag] : convs) {
      CudnnResult rl = bench_candidates(legacy_candidates(*conv, op, cudnn_workspace_cap()), operands,
                                        ctx.opts.warmup, ctx.opts.reps, ctx.stream, cands.reference_ms(checking), 0,
                                        checking ? check : no_check);
      std::cout << "  cudnn" << accumulation_label(f16, conv == f.conv.get()) << " timed: " << join_timed(rl.timed)
                << "; skipped: " << join(rl.skipped) << '\n';
      cands.add(std::move(rl), "", tag);
    }
  }
  // The fastest candidate is the protocol's baseline; with the check on it was checked (it was faster than every
  // accurate candidate timed before it), and the fastest that passed is reported beside it.
  const TimedCandidate* best = cands.best(false);
  if (best == nullptr) return;
  row.has_cudnn = true;
  row.cudnn_ms = best->timing.median_ms;
  row.cudnn_algo = best->name;
  row.speedup = best->timing.median_ms / row.ms;
  if (!checking) return;
  row.has_cudnn_check = best->checked;
  row.cudnn_max_rel_err = best->check.max_rel;
  row.cudnn_mare = best->check.mare;
  const TimedCandidate* ok = cands.best(true);
  if (ok == nullptr) {
    std::cout << "  no cuDNN candidate passed the check\n";
    return;
  }
  row.has_cudnn_ok = true;
  row.cudnn_ok_ms = ok->timing.median_ms;
  row.cudnn_ok_algo = ok->name;
  row.speedup_ok = ok->timing.median_ms / row.ms;
  if (ok != best)
    std::cout << "  fastest cuDNN passing the check: " << ok->name << " " << ok->timing.median_ms << " ms\n";
}

}  // namespace

MapTensors::MapTensors(const MapShape& map, const BenchOptions& opts) {
  const int64_t elems = int64_t(map.n) * map.h * map.w * map.c;
  // Odd filters with 'same' padding: every filter of the sweep gives the same output extent at this stride.
  const int64_t out_elems = same_padding_params(map, 1, opts.stride).y_elems();
  const bool fwd = wants(opts, DwconvOp::forward), bdc = wants(opts, DwconvOp::backward_data),
             bfc = wants(opts, DwconvOp::backward_filter);
  const size_t bytes = opts.dtype == DType::f16 ? 2 : sizeof(float);
  rotations = rotation_count(size_t(elems) * bytes);
  if (fwd || bfc) x.emplace(make_rotated(elems, rotations, kXSeed, opts.dtype));
  if (bdc || bfc) dy.emplace(make_rotated(out_elems, rotations, kDySeed, opts.dtype));
  if (!opts.check) {  // host copies only serve the accuracy check
    if (x) x->host0 = {};
    if (dy) dy->host0 = {};
  }
  if (fwd) y = DeviceBuffer(size_t(out_elems) * bytes);
  if (bdc) dx = DeviceBuffer(size_t(elems) * bytes);
}

FilterTensors::FilterTensors(const dwconv::DwconvParams& p, const BenchContext& ctx) {
  const bool f16 = is_f16(ctx.opts);
  w = device_uniform(p.w_elems(), kWSeed + uint64_t(p.fh), &w_host, ctx.opts.dtype);
  dw = DeviceBuffer(size_t(p.w_elems()) * sizeof(float));
  if (ctx.cudnn != nullptr) {
    std::vector<float> wc = to_cudnn_filter(w_host, p);
    if (f16) {
      const std::vector<uint16_t> bits = round_to_half(wc);  // w_host is already FP16-rounded: exact
      w_cudnn = DeviceBuffer(bits.size() * 2);
      CNN_CUDA_CHECK(cudaMemcpy(w_cudnn.get(), bits.data(), w_cudnn.bytes(), cudaMemcpyHostToDevice));
      dw_cudnn = DeviceBuffer(size_t(p.w_elems()) * 2);
      conv = std::make_unique<CudnnDepthwise>(*ctx.cudnn, p, CUDNN_DATA_HALF, CUDNN_DATA_HALF);
      conv_f32acc = std::make_unique<CudnnDepthwise>(*ctx.cudnn, p, CUDNN_DATA_HALF, CUDNN_DATA_FLOAT);
    } else {
      w_cudnn = DeviceBuffer(wc.size() * sizeof(float));
      CNN_CUDA_CHECK(cudaMemcpy(w_cudnn.get(), wc.data(), w_cudnn.bytes(), cudaMemcpyHostToDevice));
      conv = std::make_unique<CudnnDepthwise>(*ctx.cudnn, p);
    }
    CNN_CUDA_CHECK(cudaDeviceSynchronize());
  }
}

void measure_point(DwconvOp op, const dwconv::DwconvParams& p, MapTensors& m, FilterTensors& f, const BenchContext& ctx,
                   Row& row) {
  // 'Same' padding with an odd filter: OH = ceil(IH / stride), the extent MapTensors sized Y and dY for.
  CNN_CHECK(p.oh() == (p.ih + p.stride_h - 1) / p.stride_h && p.ow() == (p.iw + p.stride_w - 1) / p.stride_w,
            "dwconv-bench: expected OH = ceil(IH / stride) and OW = ceil(IW / stride), got ", p.str());
  row.reps = ctx.opts.reps;
  row.path = dwconv::dwconv_path_name(op, p, ctx.opts.dtype, ctx.opts.bfc_accum);
  row.tolerance = check_tolerance(ctx.opts.dtype, op, ctx.opts.bfc_accum, p.fh * p.fw);
  const RunFn run = flash_run(op, p, m, f, ctx.opts, ctx.stream, ctx.scratch->fn());
  const Timing t = time_runs(run, ctx.opts.warmup, ctx.opts.reps, ctx.stream);
  row.ms = t.median_ms;
  row.tflops = p.flops() / (t.median_ms * 1e-3) / 1e12;
  const size_t bytes = op_bytes(p, ctx.opts);
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
    const CheckResult c = check_output(op, p, m, f, false, is_f16(ctx.opts));
    row.has_check = true;
    row.max_rel_err = c.max_rel;
    row.mare = c.mare;
    std::cout << "  check: " << c.samples << " samples, max rel err " << c.max_rel << ", MARE " << c.mare
              << ", max abs err " << c.max_abs
              << (c.max_rel > row.tolerance ? str_cat("  CHECK FAILED at ", c.worst) : std::string()) << '\n';
  }
  if (f.conv) measure_cudnn(op, p, m, f, ctx, row);
}

}  // namespace cnn::bench
