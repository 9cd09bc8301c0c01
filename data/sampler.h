// Epoch order and rank sharding: a Philox Fisher-Yates permutation of (seed, epoch), split among ranks by stride
// so every rank gets the same number of samples, then cut into batches.
#pragma once

#include <cstdint>
#include <vector>

namespace cnn::data {

// Dataset indices in the order of one epoch: 0..n-1 when !shuffle, else a Fisher-Yates shuffle whose swap at
// position i draws Philox counter (lo32(i), hi32(i), lo32(epoch), 0) under derive_key(seed, kPermutationDomain).
std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch, bool shuffle);

// Samples per rank: floor(n / world_size) with drop_last (the remainder is dropped), else ceil (short ranks wrap
// around to the start of the permutation, so a few samples appear twice in that epoch).
int64_t shard_size(int64_t n, int world_size, bool drop_last);
// Rank r's samples: perm[(r + k * world_size) mod n] for k in [0, shard_size).
std::vector<int64_t> shard(const std::vector<int64_t>& perm, int rank, int world_size, bool drop_last);
// Batches of `batch_size` over `samples`: floor with drop_last, else ceil (the last one is short).
int64_t batch_count(int64_t samples, int64_t batch_size, bool drop_last);

}  // namespace cnn::data
