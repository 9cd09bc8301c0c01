// Host side of the TMA-fed CUDA-core kernel (fwd_tma_cc.cuh): shared-memory sizing, occupancy, the tensor map,
// configuration checks and launches, FP16 and FP32.
#include "kernels/dwconv/cuda/fwd_tma_cc.cuh"
#include "kernels/dwconv/cuda/plan_cache.h"

namespace cnn::dwconv {
namespace {

template <class L>
using TmaKernel = void (*)(const CUtensorMap, const TmaArgs<L>);

template <class L>
TmaKernel<L> kernel_for(int fw) {
  switch (fw) {
    case 1:
      return dwconv_tma_cc_kernel<L, 1>;
    case 2:
      return dwconv_tma_cc_kernel<L, 2>;
    case 3:
      return dwconv_tma_cc_kernel<L, 3>;
    case 4:
      return dwconv_tma_cc_kernel<L, 4>;
    default:
      return dwconv_tma_cc_kernel<L, 5>;
  }
}

// The source as a 4-D tensor (C, W, H, N) with a box of one tile's input window; out-of-bounds elements read as 0.
template <class L>
CUtensorMap source_map(const typename L::Elem* src, const ConvGeometry& g) {
  CUtensorMap m;
  const cuuint64_t dims[4] = {cuuint64_t(g.c), cuuint64_t(g.in_w), cuuint64_t(g.in_h), cuuint64_t(g.n)};
  const cuuint64_t row = cuuint64_t(g.c) * sizeof(typename L::Elem);
  const cuuint64_t strides[3] = {row, row * g.in_w, row * g.in_w * g.in_h};
  const cuuint32_t box[4] = {L::kBN, cuuint32_t(L::kTileW + g.fw - 1), cuuint32_t(kRows + g.fh - 1), 1};
  const cuuint32_t unit[4] = {1, 1, 1, 1};
  const CUresult r = cuda::tensor_map_encoder()(&m, L::kMapType, 4, const_cast<typename L::Elem*>(src), dims, strides,
                                                box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                                CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  CNN_CHECK(r == CUDA_SUCCESS, "dwconv tma: cuTensorMapEncodeTiled failed (CUresult ", int(r), ") for N=", g.n,
            " H=", g.in_h, " W=", g.in_w, " C=", g.c, " F=", g.fh, "x", g.fw);
  return m;
}

// Blocks of the kernel for (element, fw) with smem bytes of dynamic shared memory resident at once on the whole
// device (SMs x the runtime's occupancy query, after raising the kernel's dynamic shared-memory limit): the
// persistent grid, computed once per device and size.
template <class L>
int resident_blocks(int fw, size_t smem, int device) {
  static PlanCache<std::tuple<int, size_t, int>, int> cache;
  return cache.get(std::make_tuple(fw, smem, device), [&] {
    const TmaKernel<L> k = kernel_for<L>(fw);
    // The largest window any call may use: a per-shape limit would be lowered again by a later, smaller filter of
    // the same width and fail the earlier shape's next launch.
    CNN_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kMaxSmem)));
    int blocks = 0;
    CNN_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, L::kThreads, smem));
    CNN_CHECK(blocks >= 1, "dwconv tma: no block of ", smem, " bytes of shared memory fits an SM (FW=", fw, ")");
    int sms = 0;
    CNN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms * blocks;
  });
}

template <class L>
size_t config_smem(const ConvGeometry& g, const TmaCcConfig& cfg) {
  return smem_bytes<L>(g.fh, g.fw, cfg.stages, filter_floats<L>(g));
}

// The tensor map's row stride must be a multiple of 16 bytes: C % 8 (FP16), C % 4 (FP32).
template <class L>
constexpr int kChannelMultiple = 16 / static_cast<int>(sizeof(typename L::Elem));

// The shape on the narrowest tiles (16x8, three stages); launch() checks the configuration's own window.
template <class L>
bool supports(const ConvGeometry& g) {
  if (g.stride_h != 1 || g.stride_w != 1 || g.c % kChannelMultiple<L> != 0 || g.fw < 1 || g.fw > kTmaCcMaxFw)
    return false;
  if (smem_bytes<L>(g.fh, g.fw, 3) > kMaxSmem) return false;
  int device = 0, major = 0;
  CNN_CUDA_CHECK(cudaGetDevice(&device));
  CNN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9;
}

template <class L>
std::string describe(const ConvGeometry& g, const TmaCcConfig& cfg, const char* dtype) {
  return str_cat(g.flip ? "bdc" : "fwd", dtype, " cuda-core tma FW=", g.fw, " tile=", kRows, "x", L::kTileW,
                 " BN=", L::kBN, " lane=", L::kBytesPerLane, "B", L::kRowsPerThread > 1 ? " rows=2" : "",
                 " stages=", cfg.stages);
}

template <class L>
void launch(const typename L::Elem* src, const typename L::Elem* w, const typename L::Elem* bias, typename L::Elem* dst,
            const ConvGeometry& g, const TmaCcConfig& cfg, cudaStream_t stream) {
  using Narrow = Lane<typename L::Elem, 16>;  // supports() is about the shape, on the narrow three-stage window
  CNN_CHECK(supports<Narrow>(g), "dwconv tma: needs sm_90, stride 1, C % ", kChannelMultiple<L>,
            " == 0, FW <= ", kTmaCcMaxFw, " and a window within ", kMaxSmem, " bytes of shared memory, got C=", g.c,
            " F=", g.fh, "x", g.fw, " stride ", g.stride_h, "x", g.stride_w);
  const size_t smem = config_smem<L>(g, cfg);
  CNN_CHECK(smem <= kMaxSmem, "dwconv tma: ", cfg.stages, " stages of a 16x", L::kTileW, " tile's window for F=", g.fh,
            "x", g.fw, " (C=", g.c, ") need ", smem,
            " bytes of shared memory, more than ", kMaxSmem);
  TmaArgs<L> a{w, bias, dst, g.n, g.c, g.out_h, g.out_w, g.fh, g.pad_t, g.pad_l, g.flip ? 1 : 0, 0, 0, 0, 0, 0};
  a.order = kSliced;
  a.tiles_h = (g.out_h + kRows - 1) / kRows;
  a.tiles_w = (g.out_w + L::kTileW - 1) / L::kTileW;
  a.div_w = cuda::FastDivmod(static_cast<uint32_t>(a.tiles_w));
  a.div_h = cuda::FastDivmod(static_cast<uint32_t>(a.tiles_h));
  a.div_n = cuda::FastDivmod(static_cast<uint32_t>(g.n));
  a.slices = (g.c + L::kBN - 1) / L::kBN;
  a.div_s = cuda::FastDivmod(static_cast<uint32_t>(a.slices));
  a.filter_floats = filter_floats<L>(g);
  const long long tiles = static_cast<long long>(a.slices) * g.n * a.tiles_h * a.tiles_w;
  CNN_CHECK(tiles < (1LL << 31), "dwconv tma: ", tiles, " tiles do not fit an int");
  a.tiles = static_cast<int>(tiles);
  a.stage_bytes = static_cast<int>(stage_bytes<L>(g.fh, g.fw));
  a.stages = cfg.stages;
  int device = 0;
  CNN_CUDA_CHECK(cudaGetDevice(&device));
  const int grid = static_cast<int>(std::min<long long>(tiles, resident_blocks<L>(g.fw, smem, device)));
  const CUtensorMap map = source_map<L>(src, g);
  kernel_for<L>(g.fw)<<<grid, L::kThreads, smem, stream>>>(map, a);
  CNN_CHECK_LAUNCH("dwconv_tma_cc_kernel");
}

// Runs f with the Lane of cfg's width, rows per thread and tile width.
template <class T, class F>
decltype(auto) with_lane(const TmaCcConfig& cfg, F&& f) {
  CNN_CHECK(cfg.lane_bytes == 16 || cfg.lane_bytes == 8, "dwconv tma: lane width must be 16 or 8 bytes, got ",
            cfg.lane_bytes);
  CNN_CHECK(cfg.rows_per_thread == 1 || (cfg.rows_per_thread == 2 && cfg.lane_bytes == 8),
            "dwconv tma: rows per thread must be 1, or 2 with 8-byte lanes, got ", cfg.rows_per_thread, " with ",
            cfg.lane_bytes, "-byte lanes");
  CNN_CHECK(cfg.tile_cols == kTM || cfg.tile_cols == 2 * kTM, "dwconv tma: tile width must be ", kTM, " or ", 2 * kTM,
            " columns, got ", cfg.tile_cols);
  CNN_CHECK(cfg.stages >= 2 && cfg.stages <= 4, "dwconv tma: stages must be 2, 3 or 4, got ", cfg.stages);
  const auto with_width = [&](auto narrow, auto wide) { return cfg.tile_cols == kTM ? f(narrow) : f(wide); };
  if (cfg.lane_bytes == 8)
    return cfg.rows_per_thread == 2 ? with_width(Lane<T, 8, 2>{}, Lane<T, 8, 2, 2>{})
                                    : with_width(Lane<T, 8>{}, Lane<T, 8, 1, 2>{});
  return with_width(Lane<T, 16>{}, Lane<T, 16, 1, 2>{});
}

}  // namespace

bool tma_cc_config_fits(const ConvGeometry& g, const TmaCcConfig& cfg, bool f16) {
  const auto fits = [&](auto l) { return config_smem<decltype(l)>(g, cfg) <= kMaxSmem; };
  return f16 ? with_lane<__half>(cfg, fits) : with_lane<float>(cfg, fits);
}
bool tma_cc_f16_supports(const ConvGeometry& g) { return supports<Lane<__half, 16>>(g); }
bool tma_cc_f32_supports(const ConvGeometry& g) { return supports<Lane<float, 16>>(g); }
std::string tma_cc_f16_describe(const ConvGeometry& g, const TmaCcConfig& cfg) {
  return with_lane<__half>(cfg, [&](auto l) { return describe<decltype(l)>(g, cfg, " f16"); });
}
std::string tma_cc_f32_describe(const ConvGeometry& g, const TmaCcConfig& cfg) {
  return with_lane<float>(cfg, [&](auto l) { return describe<decltype(l)>(g, cfg, ""); });
}

void launch_dwconv_tma_cc_f16(const __half* src, const __half* w, const __half* bias, __half* dst,
                              const ConvGeometry& g, const TmaCcConfig& cfg, cudaStream_t stream) {
  with_lane<__half>(cfg, [&](auto l) { launch<decltype(l)>(src, w, bias, dst, g, cfg, stream); });
}

void launch_dwconv_tma_cc_f32(const float* src, const float* w, const float* bias, float* dst, const ConvGeometry& g,
                              const TmaCcConfig& cfg, cudaStream_t stream) {
  with_lane<float>(cfg, [&](auto l) { launch<decltype(l)>(src, w, bias, dst, g, cfg, stream); });
}

}  // namespace cnn::dwconv
