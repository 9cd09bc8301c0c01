// The geometries forward-style kernels run on (kernels.h): forward, and stride-1 backward-data as a forward pass
// over dY with the filter rotated by 180 degrees; and the plan caches' device + shape key.
#include "core/cuda_check.h"
#include "kernels/dwconv/cuda/kernels.h"

namespace cnn::dwconv {

ConvGeometry forward_geometry(const DwconvParams& p) {
  ConvGeometry g;
  g.n = p.n, g.in_h = p.ih, g.in_w = p.iw, g.c = p.c;
  g.out_h = p.oh(), g.out_w = p.ow();
  g.fh = p.fh, g.fw = p.fw;
  g.stride_h = p.stride_h, g.stride_w = p.stride_w;
  g.pad_t = p.pad_top, g.pad_l = p.pad_left;
  g.flip = false;
  return g;
}

ConvGeometry backward_data_geometry_stride1(const DwconvParams& p) {
  ConvGeometry g;
  g.n = p.n, g.in_h = p.oh(), g.in_w = p.ow(), g.c = p.c;
  g.out_h = p.ih, g.out_w = p.iw;
  g.fh = p.fh, g.fw = p.fw;
  g.pad_t = p.fh - 1 - p.pad_top, g.pad_l = p.fw - 1 - p.pad_left;  // negative: crop
  g.flip = true;
  return g;
}

DeviceShapeKey device_shape_key(const DwconvParams& p) {
  int device = 0;
  CNN_CUDA_CHECK(cudaGetDevice(&device));
  return {device,     p.n,        p.ih,      p.iw,         p.c,        p.fh,       p.fw,
          p.stride_h, p.stride_w, p.pad_top, p.pad_bottom, p.pad_left, p.pad_right};
}

}  // namespace cnn::dwconv
