// CUDA side of Tensor: strided copy, dtype conversion, fill, Philox random init (bit-identical to the CPU path),
// axpy and cross-device memcpy. All work runs on the device's compute stream.
#include "core/cuda_check.h"
#include "core/cuda_context.h"
#include "core/cuda_device_guard.h"
#include "core/cuda_dtype.cuh"
#include "core/cuda_pack.cuh"
#include "core/philox.h"
#include "core/tensor_device.h"

namespace cnn::detail {

namespace {

constexpr int kBlock = 256;

template <class W>
__global__ void strided_copy_kernel(const W* __restrict__ src, W* __restrict__ dst, StridedCopy p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.numel; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, so = 0, dof = 0;
    for (int a = p.ndim - 1; a >= 0; --a) {
      const int64_t idx = rem % p.shape[a];
      rem /= p.shape[a];
      so += idx * p.src_stride[a];
      dof += idx * p.dst_stride[a];
    }
    dst[dof] = src[so];
  }
}

template <class D, class S>
__global__ void convert_kernel(const S* __restrict__ src, D* __restrict__ dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    dst[i] = device_cast<D>(src[i]);
  }
}

template <class W>
__global__ void fill_kernel(W* __restrict__ dst, W value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    dst[i] = value;
  }
}

template <class T>
__global__ void random_kernel(T* __restrict__ dst, int64_t n, RandomParams p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t e = p.offset + uint64_t(i);
    float v;
    if (p.kind == RandomKind::uniform) {
      v = rng::uniform_value(p.seed, e, p.a, p.b);
    } else if (p.kind == RandomKind::normal) {
      v = rng::normal_value(p.seed, e, p.a, p.b);
    } else {
      v = rng::trunc_normal_value(p.seed, e, p.a, p.b, p.c, p.d);
    }
    dst[i] = device_cast<T>(v);
  }
}

// y += alpha x in one launch: kN-element packs (aligned pointers), then the n % kN tail elements, one thread each.
// x may alias y when both have one type; x narrower than y (f16 / bf16 into f32: gradient accumulation into FP32
// leaves) is widened as it is loaded, with no converted copy.
template <class TX, class TY, int kN>
__global__ void axpy_kernel(const TX* x, TY* y, int64_t n, float alpha) {
  const int64_t packs = n / kN, t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  for (int64_t p = t; p < packs; p += int64_t(gridDim.x) * blockDim.x) {
    float xv[kN], yv[kN];
    cuda::load_n<kN>(x + p * kN, xv);
    cuda::load_n<kN>(y + p * kN, yv);
#pragma unroll
    for (int k = 0; k < kN; ++k) yv[k] = yv[k] + alpha * xv[k];
    cuda::store_n<kN>(y + p * kN, yv);
  }
  const int64_t i = packs * kN + t;
  if (i < n) y[i] = device_cast<TY>(widen(y[i]) + alpha * widen(x[i]));
}

__global__ void axpy_f64_kernel(const double* x, double* y, int64_t n, double alpha) {  // x may alias y
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = y[i] + alpha * x[i];
  }
}

// kN = the elements of one 16-byte access of y (x then moves kN of its own in one access too), or 1 if a pointer is
// not 16-byte aligned.
template <class TX, class TY>
void launch_axpy(const TX* x, TY* y, int64_t n, float alpha, cudaStream_t s) {
  constexpr int kN = cuda::Pack<TY>::kN;
  if (cuda::packs_ok(x, y)) {
    axpy_kernel<TX, TY, kN><<<grid_for(std::max<int64_t>(n / kN, 1), kBlock, 32768), kBlock, 0, s>>>(x, y, n, alpha);
  } else {
    axpy_kernel<TX, TY, 1><<<grid_for(n, kBlock, 32768), kBlock, 0, s>>>(x, y, n, alpha);
  }
  CNN_CHECK_LAUNCH("axpy_kernel");
}

template <int kBytes>
void launch_strided_copy(const void* src, void* dst, const StridedCopy& p, cudaStream_t s) {
  using W = typename cuda::Word<kBytes>::type;
  strided_copy_kernel<W><<<grid_for(p.numel, kBlock), kBlock, 0, s>>>(static_cast<const W*>(src),
                                                                      static_cast<W*>(dst), p);
  CNN_CHECK_LAUNCH("strided_copy_kernel");
}

template <int kBytes>
void launch_fill(void* dst, uint64_t value, int64_t n, cudaStream_t s) {
  using W = typename cuda::Word<kBytes>::type;
  fill_kernel<W><<<grid_for(n, kBlock), kBlock, 0, s>>>(static_cast<W*>(dst), W(value), n);
  CNN_CHECK_LAUNCH("fill_kernel");
}

}  // namespace

void cuda_strided_copy(int device, const void* src, void* dst, const StridedCopy& p) {
  if (p.numel == 0) return;
  CudaDeviceGuard guard(device);
  cudaStream_t s = cuda_context(Device::cuda(device)).compute_stream();
  switch (p.elem_size) {
    case 1: return launch_strided_copy<1>(src, dst, p, s);
    case 2: return launch_strided_copy<2>(src, dst, p, s);
    case 4: return launch_strided_copy<4>(src, dst, p, s);
    case 8: return launch_strided_copy<8>(src, dst, p, s);
  }
  throw Error(str_cat("cuda_strided_copy: unsupported element size ", p.elem_size));
}

void cuda_convert(int device, const void* src, DType src_t, void* dst, DType dst_t, int64_t n) {
  if (n == 0) return;
  CudaDeviceGuard guard(device);
  cudaStream_t s = cuda_context(Device::cuda(device)).compute_stream();
  dispatch_dtype_cuda(src_t, [&](auto stag) {
    using S = typename decltype(stag)::type;
    dispatch_dtype_cuda(dst_t, [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      convert_kernel<D, S><<<grid_for(n, kBlock), kBlock, 0, s>>>(static_cast<const S*>(src), static_cast<D*>(dst), n);
      CNN_CHECK_LAUNCH("convert_kernel");
    });
  });
}

void cuda_fill(int device, void* dst, uint64_t value, int elem_size, int64_t n) {
  if (n == 0) return;
  CudaDeviceGuard guard(device);
  cudaStream_t s = cuda_context(Device::cuda(device)).compute_stream();
  switch (elem_size) {
    case 1: return launch_fill<1>(dst, value, n, s);
    case 2: return launch_fill<2>(dst, value, n, s);
    case 4: return launch_fill<4>(dst, value, n, s);
    case 8: return launch_fill<8>(dst, value, n, s);
  }
  throw Error(str_cat("cuda_fill: unsupported element size ", elem_size));
}

void cuda_random(int device, void* dst, DType t, int64_t n, const RandomParams& p) {
  if (n == 0) return;
  CudaDeviceGuard guard(device);
  cudaStream_t s = cuda_context(Device::cuda(device)).compute_stream();
  dispatch_dtype_cuda(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
      random_kernel<T><<<grid_for(n, kBlock), kBlock, 0, s>>>(static_cast<T*>(dst), n, p);
      CNN_CHECK_LAUNCH("random_kernel");
    } else {
      throw Error(str_cat("cuda_random: expected a floating dtype, got ", dtype_name(t)));
    }
  });
}

void cuda_axpy(int device, const void* x, DType tx, void* y, DType t, int64_t n, double alpha) {
  if (n == 0) return;
  CudaDeviceGuard guard(device);
  cudaStream_t s = cuda_context(Device::cuda(device)).compute_stream();
  if (tx != t) {
    CNN_CHECK(t == DType::f32 && (tx == DType::f16 || tx == DType::bf16), "Tensor::add_: adds ", dtype_name(tx),
              " into ", dtype_name(t), " only by a converted copy (f16 / bf16 into f32 directly)");
    if (tx == DType::f16) return launch_axpy(static_cast<const __half*>(x), static_cast<float*>(y), n, float(alpha), s);
    return launch_axpy(static_cast<const __nv_bfloat16*>(x), static_cast<float*>(y), n, float(alpha), s);
  }
  dispatch_dtype_cuda(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>) {
      axpy_f64_kernel<<<grid_for(n, kBlock), kBlock, 0, s>>>(static_cast<const double*>(x), static_cast<double*>(y), n,
                                                             alpha);
      CNN_CHECK_LAUNCH("axpy_f64_kernel");
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
      launch_axpy(static_cast<const T*>(x), static_cast<T*>(y), n, float(alpha), s);
    } else {
      throw Error(str_cat("Tensor::add_: expected a floating dtype, got ", dtype_name(t)));
    }
  });
}

void cuda_memcpy(const void* src, Device src_dev, void* dst, Device dst_dev, int64_t bytes) {
  if (bytes == 0) return;
  if (src_dev.is_cpu() && dst_dev.is_cuda()) {
    CudaDeviceGuard guard(dst_dev.index);
    cudaStream_t s = cuda_context(dst_dev).compute_stream();
    CNN_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyHostToDevice, s));
    // The host buffer may be freed as soon as we return, so wait for the transfer.
    CNN_CUDA_CHECK(cudaStreamSynchronize(s));
  } else if (src_dev.is_cuda() && dst_dev.is_cpu()) {
    CudaDeviceGuard guard(src_dev.index);
    cudaStream_t s = cuda_context(src_dev).compute_stream();
    CNN_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDeviceToHost, s));
    CNN_CUDA_CHECK(cudaStreamSynchronize(s));
  } else if (src_dev == dst_dev) {
    CudaDeviceGuard guard(src_dev.index);
    CNN_CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDeviceToDevice,
                                   cuda_context(src_dev).compute_stream()));
  } else {
    CNN_CHECK(src_dev.is_cuda() && dst_dev.is_cuda(), "cuda_memcpy: expected a cuda device, got ", src_dev.str(),
              " -> ", dst_dev.str());
    // Source work must be finished and the copy complete before either side's stream may reuse the memory.
    Context::get(src_dev).synchronize();
    cudaStream_t s = cuda_context(dst_dev).compute_stream();
    CudaDeviceGuard guard(dst_dev.index);
    CNN_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_dev.index, src, src_dev.index, size_t(bytes), s));
    CNN_CUDA_CHECK(cudaStreamSynchronize(s));
  }
}

}  // namespace cnn::detail
