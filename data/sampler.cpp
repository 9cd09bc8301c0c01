// Philox Fisher-Yates permutation and strided sharding.
#include "data/sampler.h"

#include <numeric>

#include "core/error.h"
#include "core/philox.h"
#include "data/transforms.h"

namespace cnn::data {

std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch, bool shuffle) {
  CNN_CHECK(n >= 0, "epoch_permutation: n must be >= 0, got ", n);
  CNN_CHECK(epoch >= 0, "epoch_permutation: epoch must be >= 0, got ", epoch);
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t(0));
  if (!shuffle) return perm;
  const uint64_t key = derive_key(seed, kPermutationDomain);
  for (int64_t i = n - 1; i > 0; --i) {
    const rng::Philox4 r = rng::philox4x32_10(
        rng::Philox4{{uint32_t(i), uint32_t(uint64_t(i) >> 32), uint32_t(epoch), 0u}}, uint32_t(key),
        uint32_t(key >> 32));
    // j uniform in [0, i]: the high 64 bits of a 64-bit draw times (i + 1).
    const uint64_t draw = (uint64_t(r.v[0]) << 32) | r.v[1];
    const int64_t j = int64_t((unsigned __int128)draw * uint64_t(i + 1) >> 64);
    std::swap(perm[size_t(i)], perm[size_t(j)]);
  }
  return perm;
}

int64_t shard_size(int64_t n, int world_size, bool drop_last) {
  CNN_CHECK(world_size >= 1, "shard: world_size must be >= 1, got ", world_size);
  return drop_last ? n / world_size : (n + world_size - 1) / world_size;
}

std::vector<int64_t> shard(const std::vector<int64_t>& perm, int rank, int world_size, bool drop_last) {
  CNN_CHECK(rank >= 0 && rank < world_size, "shard: rank must be in [0, ", world_size, "), got ", rank);
  const int64_t n = int64_t(perm.size());
  const int64_t count = shard_size(n, world_size, drop_last);
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) out[size_t(k)] = perm[size_t((rank + k * world_size) % n)];
  return out;
}

int64_t batch_count(int64_t samples, int64_t batch_size, bool drop_last) {
  CNN_CHECK(batch_size >= 1, "batch_count: batch_size must be >= 1, got ", batch_size);
  return drop_last ? samples / batch_size : (samples + batch_size - 1) / batch_size;
}

}  // namespace cnn::data
