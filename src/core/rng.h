#pragma once
// Counter-based random numbers (Philox-4x32-10). A stream is a pure function of
// its key, e.g. (seed, step, layer, head) for RFA's random matrices or
// (seed, step) for a batch, so a resumed run draws exactly what an
// uninterrupted one would, with no generator state to save.
#include <array>
#include <cstdint>

namespace rfa {

class CounterRng {
 public:
  // seed keys the cipher; a, b, c select an independent stream under that seed.
  explicit CounterRng(uint64_t seed, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0);

  uint32_t next_u32();
  uint64_t next_u64();
  uint64_t below(uint64_t n);  // uniform integer in [0, n), n > 0
  double uniform();            // uniform in [0, 1), 53 bits
  double normal();             // standard normal (Box-Muller)

  // The next draw comes from block `block` of the stream (4 u32 each: two uniforms, so one pair of
  // normals, the first the cosine's). A fresh stream starts at block 0; normal number 2b (0-based)
  // of a fresh stream is the first normal after seek_block(b): a long fill split into parts of even
  // length draws exactly what one pass would.
  void seek_block(uint64_t block);

 private:
  void refill();
  std::array<uint32_t, 2> key_;
  std::array<uint32_t, 4> counter_;
  std::array<uint32_t, 4> block_{};
  int used_ = 4;
  bool has_spare_normal_ = false;
  double spare_normal_ = 0.0;
};

// splitmix64: mixes a 64-bit value; used to fold stream ids together.
uint64_t mix64(uint64_t x);

// A pseudo-random permutation of [0, n) keyed by `key`, evaluated at i < n: a balanced
// Feistel network on the smallest even number of bits covering n, cycle-walked back into
// [0, n) (under 4 rounds of the network on average). A shuffle that needs no table, so a
// data order is a pure function of (seed, epoch, index): exact resume, O(1) memory.
uint64_t permute_index(uint64_t i, uint64_t n, uint64_t key);

}  // namespace rfa
