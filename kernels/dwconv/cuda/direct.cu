// FP32 direct depthwise kernels (stride > 1, C % 4 != 0, unaligned pointers): the shared kernels of
// direct.cuh on groups of 4 channels (float4) or 1. NHWC.
#include "kernels/dwconv/cuda/direct.cuh"

namespace cnn::dwconv {
namespace {

// kWidth FP32 channels: float4 loads and stores for 4, scalar for 1.
template <int kWidth>
struct FloatGroup : direct::GroupSums<kWidth> {
  static_assert(kWidth == 1 || kWidth == 4, "FP32 groups are float or float4");
  using Elem = float;
  static constexpr int kVec = kWidth;
  __device__ void load(const float* p) {
    if constexpr (kVec == 4) {
      const float4 q = __ldg(reinterpret_cast<const float4*>(p));
      this->v[0] = q.x, this->v[1] = q.y, this->v[2] = q.z, this->v[3] = q.w;
    } else {
      this->v[0] = __ldg(p);
    }
  }
  __device__ void store(float* p) const {
    if constexpr (kVec == 4)
      *reinterpret_cast<float4*>(p) = make_float4(this->v[0], this->v[1], this->v[2], this->v[3]);
    else
      p[0] = this->v[0];
  }
};

}  // namespace

void launch_dwconv_direct_forward(const float* src, const float* w, const float* bias, float* dst,
                                  const ConvGeometry& g, bool vec4, cudaStream_t stream) {
  if (vec4)
    direct::launch_forward<FloatGroup<4>>(src, w, bias, dst, g, stream);
  else
    direct::launch_forward<FloatGroup<1>>(src, w, bias, dst, g, stream);
}

void launch_dwconv_direct_backward_data(const float* dy, const float* w, float* dx, const DwconvParams& p, bool vec4,
                                        cudaStream_t stream) {
  if (vec4)
    direct::launch_backward_data<FloatGroup<4>>(dy, w, dx, p, stream);
  else
    direct::launch_backward_data<FloatGroup<1>>(dy, w, dx, p, stream);
}

}  // namespace cnn::dwconv
