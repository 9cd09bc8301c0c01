// A grow-only device buffer serving as the depthwise ops' scratch (DwconvScratch) for callers without an allocator
// of their own (benchmarks, tests); the training stack passes its CUDA context's workspace instead.
#pragma once

#include <cstddef>

#include "kernels/dwconv/dwconv_cuda.h"

namespace cnn::dwconv {

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ~ScratchBuffer();  // waits for the device before freeing
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  // The buffer, grown to at least `bytes` (growing waits for the device, so queued users of the old one finish).
  void* get(size_t bytes);
  size_t bytes() const { return bytes_; }
  // A DwconvScratch that calls get(); valid while this buffer lives.
  DwconvScratch fn() {
    return [this](size_t bytes) { return get(bytes); };
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace cnn::dwconv
