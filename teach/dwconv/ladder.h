// The CPU side of the depthwise-convolution teaching ladder (docs/tutorial/dwconv.md): the naive forward loops that
// the vectorized backend (dwconv_forward_cpu) is measured against, backward-data as a flipped forward, and
// backward-filter as a reduction whose accumulation axis is split into chunks, in FP32, FP16 or hybrid
// accumulation. Shapes, layouts and formulas as in kernels/dwconv/dwconv.h; every function overwrites its output.
#pragma once

#include <string>

#include "core/dtype.h"
#include "kernels/dwconv/dwconv.h"

namespace cnn::teach {

using dwconv::DwconvParams;

// CPU rung 1: the formula as seven nested loops, one FP32 accumulator per output, channel innermost (so the loads
// are at least contiguous). Any stride and padding.
void forward_naive_cpu(const float* x, const float* w, float* y, const DwconvParams& p);

// Backward-data of a stride-1 convolution is a forward convolution of dY with the filter turned by 180 degrees
// and the padding mirrored (FH-1-pT on top, ...). Builds the flipped filter and runs dwconv_forward_cpu.
// Needs stride 1 and every padding <= filter extent - 1 (a larger padding would be a crop, not a padding).
void backward_data_as_flipped_forward(const float* dy, const float* w, float* dx, const DwconvParams& p);
// The params of that forward: input OH x OW, mirrored paddings, output IH x IW.
DwconvParams flipped_forward_params(const DwconvParams& p);

// How products are summed inside one chunk of the reduction:
//   fp32   every product added into an FP32 sum;
//   fp16   every product added into an FP16 sum (each step rounded to FP16): what the fast FP16 units do, and why
//          nobody does it over a long reduction;
//   hybrid runs of dwconv::kBfcHaRun consecutive dY columns summed in FP16, each run's partial added into FP32
//          (the Flash-DWC "ha" mode: short FP16 runs keep their rounding error small).
enum class Accumulation { fp32, fp16, hybrid };
const char* accumulation_name(Accumulation a);

// dW[i,j,c] = sum over (n, oh, ow) of X[n, oh*sH+i-pT, ow*sW+j-pL, c] * dY[n, oh, ow, c]. The N*OH output rows
// form the accumulation axis; it is split into `chunks` contiguous parts (what the GPU spreads over blocks), each
// summed on its own with `acc`, and the chunk partials are then added in FP32. x and dy hold the values the sum
// sees (FP16-representable for fp16 / hybrid: the caller rounds them). chunks >= 1.
void backward_filter_split(const float* x, const float* dy, float* dw, const DwconvParams& p, int chunks,
                           Accumulation acc);

}  // namespace cnn::teach
