// Device buffers, counter-based U(-1,1) fills and the L2 rotation count for dwconv-bench.
#include "apps/dwconv-bench/device_buffer.h"

#include <algorithm>
#include <utility>

#include "core/cuda_check.h"

namespace cnn::bench {
namespace {

constexpr int kMaxRotations = 4096;  // only reached by maps of a few KiB

uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) CNN_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) cudaFree(ptr_);  // a destructor must not throw; a failed free has nothing left to undo
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void fill_uniform(float* host, int64_t count, uint64_t seed) {
  const uint64_t base = splitmix64(seed);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    // Top 24 bits -> [0, 1) exactly representable in FP32, then mapped to [-1, 1).
    const uint64_t bits = splitmix64(base ^ (uint64_t(i) * 0xD1B54A32D192ED03ull)) >> 40;
    host[i] = float(bits) * (2.0f / 16777216.0f) - 1.0f;
  }
}

std::vector<float> host_uniform(int64_t count, uint64_t seed) {
  std::vector<float> values(static_cast<size_t>(count));
  fill_uniform(values.data(), count, seed);
  return values;
}

std::vector<uint16_t> round_to_half(std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    bits[i] = float_to_half_bits(values[i]);
    values[i] = half_bits_to_float(bits[i]);
  }
  return bits;
}

DeviceBuffer device_uniform(int64_t count, uint64_t seed, std::vector<float>* host_copy, DType dtype) {
  std::vector<float> values = host_uniform(count, seed);
  DeviceBuffer buf;
  if (dtype == DType::f16) {
    const std::vector<uint16_t> bits = round_to_half(values);
    buf = DeviceBuffer(size_t(count) * 2);
    CNN_CUDA_CHECK(cudaMemcpy(buf.get(), bits.data(), buf.bytes(), cudaMemcpyHostToDevice));
  } else {
    buf = DeviceBuffer(size_t(count) * sizeof(float));
    CNN_CUDA_CHECK(cudaMemcpy(buf.get(), values.data(), buf.bytes(), cudaMemcpyHostToDevice));
  }
  CNN_CUDA_CHECK(cudaDeviceSynchronize());  // a pageable upload may return before its DMA has landed
  if (host_copy != nullptr) *host_copy = std::move(values);
  return buf;
}

void copy_to_host(const DeviceBuffer& src, std::vector<float>& dst, int64_t count) {
  CNN_CHECK(size_t(count) * sizeof(float) <= src.bytes(), "copy_to_host: asked for ", count,
            " floats from a buffer of ", src.bytes(), " bytes");
  dst.resize(size_t(count));
  CNN_CUDA_CHECK(cudaMemcpy(dst.data(), src.get(), size_t(count) * sizeof(float), cudaMemcpyDeviceToHost));
}

void copy_half_to_host(const DeviceBuffer& src, std::vector<float>& dst, int64_t count) {
  CNN_CHECK(size_t(count) * 2 <= src.bytes(), "copy_half_to_host: asked for ", count, " halves from a buffer of ",
            src.bytes(), " bytes");
  std::vector<uint16_t> bits(static_cast<size_t>(count));
  CNN_CUDA_CHECK(cudaMemcpy(bits.data(), src.get(), size_t(count) * 2, cudaMemcpyDeviceToHost));
  dst.resize(size_t(count));
  for (size_t i = 0; i < bits.size(); ++i) dst[i] = half_bits_to_float(bits[i]);
}

int l2_cache_bytes() {
  int dev = 0, l2 = 0;
  CNN_CUDA_CHECK(cudaGetDevice(&dev));
  CNN_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  return l2;
}

int rotation_count(size_t set_bytes) {
  const size_t target = 2 * size_t(l2_cache_bytes());
  if (set_bytes == 0 || set_bytes >= target) return 1;
  return int(std::min<size_t>(kMaxRotations, (target + set_bytes - 1) / set_bytes + 1));
}

RotatedTensor make_rotated(int64_t elems, int count, uint64_t seed, DType dtype) {
  CNN_CHECK(elems >= 1 && count >= 1, "make_rotated: expected elems, count >= 1, got ", elems, ", ", count);
  constexpr int64_t kAlignFloats = 64;  // elements (>= 128 bytes): every copy keeps the vectorized paths' alignment
  RotatedTensor t;
  t.elems = elems;
  t.stride = (elems + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  t.count = count;
  t.elem_bytes = dtype == DType::f16 ? 2 : 4;
  t.buf = DeviceBuffer(size_t(t.stride) * count * t.elem_bytes);
  for (int i = 0; i < count; ++i) {
    std::vector<float> values = host_uniform(elems, seed + uint64_t(i));
    if (dtype == DType::f16) {
      const std::vector<uint16_t> bits = round_to_half(values);
      CNN_CUDA_CHECK(cudaMemcpy(t.raw(i), bits.data(), size_t(elems) * 2, cudaMemcpyHostToDevice));
    } else {
      CNN_CUDA_CHECK(cudaMemcpy(t.raw(i), values.data(), size_t(elems) * sizeof(float), cudaMemcpyHostToDevice));
    }
    if (i == 0) t.host0 = std::move(values);
  }
  CNN_CUDA_CHECK(cudaDeviceSynchronize());  // a pageable upload may return before its DMA has landed
  return t;
}

}  // namespace cnn::bench
