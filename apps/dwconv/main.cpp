// dwconv: one depthwise-convolution op (Flash-DWC) on tensors from a safetensors file, the result written to one.
//   dwconv fwd|bdc|bfc --in IN.safetensors --out OUT.safetensors [--stride h,w] [--padding t,b,l,r]
//          [--input-size H,W] [--filter-size FH,FW] [--dtype f32|f16] [--bfc-accum fp32|ha] [--device cpu|cuda]
// Inputs are F32: x (N, H, W, C), w (FH, FW, C), dy (N, OH, OW, C); fwd reads x and w, bdc dy and w, bfc x and dy.
// The output is one F32 tensor: y, dx or dw. Errors: one line on stderr; exit status 2 for command-line syntax,
// 1 for everything else.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli_main.h"
#include "apps/dwconv/tool.h"
#include "core/error.h"
#include "core/safetensors.h"

namespace {

using cnn::str_cat;
using cnn::dwconv_tool::Op;

// "a,b[,c,d]" -> `count` integers >= `min`; otherwise an error naming the flag.
std::vector<int> parse_ints(const std::string& flag, const std::string& text, size_t count, int min,
                            const char* form) {
  std::vector<int> out;
  bool ok = !text.empty() && text.back() != ',';
  std::stringstream ss(text);
  std::string item;
  while (ok && std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    ok = !item.empty() && *end == '\0' && v >= min && v <= (1L << 30);
    out.push_back(int(v));
  }
  if (!ok || out.size() != count)
    throw cnn::Error(str_cat(flag, ": expected ", form, " (integers >= ", min, "), got '", text, "'"));
  return out;
}

struct Cli {
  std::string op, in, out, stride, padding, input_size, filter_size, dtype = "f32", bfc_accum, device = "cpu";
};

cnn::dwconv_tool::Options to_options(const Cli& c) {
  cnn::dwconv_tool::Options o;
  o.op = c.op == "fwd" ? Op::fwd : c.op == "bdc" ? Op::bdc : Op::bfc;
  o.in = c.in;
  o.out = c.out;
  if (!c.stride.empty()) {
    const auto s = parse_ints("--stride", c.stride, 2, 1, "h,w");
    o.stride_h = s[0], o.stride_w = s[1];
  }
  if (!c.padding.empty()) {
    const auto p = parse_ints("--padding", c.padding, 4, 0, "t,b,l,r");
    o.pad_top = p[0], o.pad_bottom = p[1], o.pad_left = p[2], o.pad_right = p[3];
  }
  if (!c.input_size.empty()) {
    if (o.op != Op::bdc) throw cnn::Error(str_cat("--input-size: only for bdc (x fixes it for ", c.op, ")"));
    const auto s = parse_ints("--input-size", c.input_size, 2, 1, "H,W");
    o.input_h = s[0], o.input_w = s[1];
  }
  if (!c.filter_size.empty()) {
    if (o.op != Op::bfc) throw cnn::Error(str_cat("--filter-size: only for bfc (w fixes it for ", c.op, ")"));
    const auto s = parse_ints("--filter-size", c.filter_size, 2, 1, "FH,FW");
    o.filter_h = s[0], o.filter_w = s[1];
  }
  o.dtype = c.dtype == "f16" ? cnn::DType::f16 : cnn::DType::f32;
  o.bfc_accum_given = !c.bfc_accum.empty();
  o.bfc_accum = c.bfc_accum == "ha" ? cnn::dwconv::BfcAccum::ha : cnn::dwconv::BfcAccum::fp32;
  o.device = c.device == "cuda" ? cnn::Device::cuda(0) : cnn::Device::cpu();
  if (!o.device.is_cpu()) cnn::require_device(o.device, "--device");
  return o;
}

int run(const Cli& c) {
  const cnn::dwconv_tool::Options o = to_options(c);
  const cnn::SafetensorsData in = cnn::load_safetensors(o.in);
  const cnn::Tensor result = cnn::dwconv_tool::run_op(o, in.tensors);
  const cnn::dwconv::DwconvParams p = cnn::dwconv_tool::resolve_params(o, in.tensors);
  cnn::save_safetensors(o.out, {{cnn::dwconv_tool::output_name(o.op), result}},
                        {{"op", c.op}, {"problem", p.str()}, {"dtype", c.dtype}, {"device", c.device}});
  std::printf("dwconv %s: %s, %s on %s -> %s '%s' %s\n", c.op.c_str(), p.str().c_str(), c.dtype.c_str(),
              c.device.c_str(), o.out.c_str(), cnn::dwconv_tool::output_name(o.op),
              cnn::shape_str(result.shape()).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"One depthwise convolution op (Flash-DWC) on safetensors tensors x, w, dy; see docs/models.md"};
  Cli c;
  app.add_option("op", c.op, "fwd (x, w -> y) | bdc (dy, w -> dx) | bfc (x, dy -> dw)")
      ->required()
      ->check(CLI::IsMember({"fwd", "bdc", "bfc"}));
  app.add_option("--in", c.in, "input safetensors file (F32 tensors x, w, dy)")->required()->type_name("FILE");
  app.add_option("--out", c.out, "output safetensors file (one F32 tensor: y, dx or dw)")->required()->type_name("FILE");
  app.add_option("--stride", c.stride, "h,w [1,1]");
  app.add_option("--padding", c.padding, "t,b,l,r [0,0,0,0]");
  app.add_option("--input-size", c.input_size, "bdc: dX's H,W (required under a stride) [from dy at stride 1]");
  app.add_option("--filter-size", c.filter_size, "bfc: dW's FH,FW (required under a stride) [from x, dy at stride 1]");
  app.add_option("--dtype", c.dtype, "compute dtype: f32 | f16 (CUDA) [f32]")->check(CLI::IsMember({"f32", "f16"}));
  app.add_option("--bfc-accum", c.bfc_accum, "bfc with --dtype f16: fp32 | ha [fp32]")
      ->check(CLI::IsMember({"fp32", "ha"}));
  app.add_option("--device", c.device, "cpu | cuda [cpu]")->check(CLI::IsMember({"cpu", "cuda"}));
  return cnn::apps::run_cli(app, argc, argv, "dwconv", [&] { return run(c); });
}
