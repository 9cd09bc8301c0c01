// Tensor checks and dispatch of the dwconv tool (tensor-level kernels of layers/backend/backend.h).
#include "apps/dwconv/tool.h"

#include <vector>

#include "core/error.h"
#include "layers/backend/backend.h"

namespace cnn::dwconv_tool {

const char* op_name(Op op) { return op == Op::fwd ? "fwd" : op == Op::bdc ? "bdc" : "bfc"; }
const char* output_name(Op op) { return op == Op::fwd ? "y" : op == Op::bdc ? "dx" : "dw"; }

namespace {

// The two tensors each op reads.
std::vector<std::string> inputs_of(Op op) {
  if (op == Op::fwd) return {"x", "w"};
  if (op == Op::bdc) return {"dy", "w"};
  return {"x", "dy"};
}

std::string layout_of(const std::string& name) {
  return name == "w" ? "(FH, FW, C)" : name == "x" ? "(N, H, W, C)" : "(N, OH, OW, C)";
}

const Tensor& fetch(const Options& o, const std::map<std::string, Tensor>& tensors, const std::string& name) {
  auto it = tensors.find(name);
  if (it == tensors.end()) {
    std::string found;
    for (const auto& [n, t] : tensors) found += (found.empty() ? "" : ", ") + n;
    throw Error(str_cat(op_name(o.op), ": ", o.in, " has no tensor '", name, "' (", op_name(o.op), " reads ",
                        inputs_of(o.op)[0], " and ", inputs_of(o.op)[1], "; found: ", found.empty() ? "none" : found,
                        ")"));
  }
  const Tensor& t = it->second;
  const int rank = name == "w" ? 3 : 4;
  if (t.dim() != rank)
    throw Error(str_cat(op_name(o.op), ": tensor '", name, "' in ", o.in, ": expected rank ", rank, " ",
                        layout_of(name), ", got shape ", shape_str(t.shape())));
  if (t.dtype() != DType::f32)
    throw Error(str_cat(op_name(o.op), ": tensor '", name, "' in ", o.in, ": expected dtype F32, got ",
                        dtype_name(t.dtype())));
  return t;
}

[[noreturn]] void mismatch(const Options& o, const std::string& what, const Shape& expected, const Shape& got) {
  throw Error(str_cat(op_name(o.op), ": ", what, ": expected ", shape_str(expected), ", got ", shape_str(got)));
}

// The input extent that gives `out` outputs at stride 1 (the only case where dY fixes it).
// filter: FH = IH + pads - OH + 1; else IH = OH - 1 + FH - pads.
int derived_extent(const Options& o, const char* flag, int out, int other, int pads, bool filter) {
  if (o.stride_h != 1 || o.stride_w != 1)
    throw Error(str_cat(op_name(o.op), ": ", flag, " is required with --stride ", o.stride_h, ",", o.stride_w,
                        " (dy does not fix it under a stride)"));
  return filter ? other + pads - out + 1 : out - 1 + other - pads;
}

}  // namespace

dwconv::DwconvParams resolve_params(const Options& o, const std::map<std::string, Tensor>& tensors) {
  dwconv::DwconvParams p;
  p.stride_h = o.stride_h;
  p.stride_w = o.stride_w;
  p.pad_top = o.pad_top;
  p.pad_bottom = o.pad_bottom;
  p.pad_left = o.pad_left;
  p.pad_right = o.pad_right;
  const int pads_h = o.pad_top + o.pad_bottom, pads_w = o.pad_left + o.pad_right;
  if (o.op == Op::fwd || o.op == Op::bfc) {
    const Tensor& x = fetch(o, tensors, "x");
    p.n = int(x.size(0)), p.ih = int(x.size(1)), p.iw = int(x.size(2)), p.c = int(x.size(3));
  }
  if (o.op == Op::fwd || o.op == Op::bdc) {
    const Tensor& w = fetch(o, tensors, "w");
    p.fh = int(w.size(0)), p.fw = int(w.size(1));
    if (o.op == Op::fwd && w.size(2) != p.c)
      mismatch(o, "tensor 'w' (FH, FW, C) must have x's C", {w.size(0), w.size(1), p.c}, w.shape());
  }
  if (o.op == Op::bdc) {
    const Tensor& dy = fetch(o, tensors, "dy");
    p.n = int(dy.size(0)), p.c = int(dy.size(3));
    const Tensor& w = tensors.at("w");
    if (w.size(2) != p.c) mismatch(o, "tensor 'w' (FH, FW, C) must have dy's C", {p.fh, p.fw, p.c}, w.shape());
    p.ih = o.input_h ? o.input_h : derived_extent(o, "--input-size", int(dy.size(1)), p.fh, pads_h, false);
    p.iw = o.input_w ? o.input_w : derived_extent(o, "--input-size", int(dy.size(2)), p.fw, pads_w, false);
  }
  if (o.op == Op::bfc) {
    const Tensor& dy = fetch(o, tensors, "dy");
    p.fh = o.filter_h ? o.filter_h : derived_extent(o, "--filter-size", int(dy.size(1)), p.ih, pads_h, true);
    p.fw = o.filter_w ? o.filter_w : derived_extent(o, "--filter-size", int(dy.size(2)), p.iw, pads_w, true);
  }
  if (p.fh < 1 || p.fw < 1 || p.ih < 1 || p.iw < 1)
    throw Error(str_cat(op_name(o.op), ": the tensors and flags give no valid problem (", p.str(), ")"));
  p.validate(op_name(o.op));
  if (o.op != Op::fwd) {
    const Tensor& dy = tensors.at("dy");
    const Shape expected{p.n, p.oh(), p.ow(), p.c};
    if (dy.shape() != expected)
      mismatch(o, str_cat("tensor 'dy' must be the output shape of ", p.str()), expected, dy.shape());
  }
  return p;
}

Tensor run_op(const Options& o, const std::map<std::string, Tensor>& tensors) {
  if (o.dtype == DType::f16 && o.device.is_cpu())
    throw Error(str_cat(op_name(o.op), ": --dtype f16 runs the FP16 CUDA kernels; needs --device cuda"));
  if (o.bfc_accum_given && (o.op != Op::bfc || o.dtype != DType::f16))
    throw Error(str_cat(op_name(o.op), ": --bfc-accum selects the FP16 backward-filter accumulation; needs bfc with "
                        "--dtype f16"));
  const dwconv::DwconvParams p = resolve_params(o, tensors);
  auto on_device = [&](const char* name) { return tensors.at(name).to(o.dtype).to(o.device); };
  Tensor out;
  switch (o.op) {
    case Op::fwd:
      out = backend::dwconv_forward(on_device("x"), on_device("w"), Tensor(), p);
      break;
    case Op::bdc:
      out = backend::dwconv_backward_data(on_device("dy"), on_device("w"), p);
      break;
    case Op::bfc:
      out = backend::dwconv_backward_filter(on_device("x"), on_device("dy"), p, o.bfc_accum);
      break;
  }
  return out.to(Device::cpu()).to(DType::f32);
}

}  // namespace cnn::dwconv_tool
