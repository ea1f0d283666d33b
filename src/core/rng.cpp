#include "core/rng.h"

#include <bit>
#include <cmath>

namespace rfa {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], hi0, lo0);
    mulhilo(kMul1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

}  // namespace

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t permute_index(uint64_t i, uint64_t n, uint64_t key) {
  if (n <= 1) return 0;
  int bits = std::bit_width(n - 1);
  bits += bits & 1;  // even: two halves of equal width
  const int half = bits / 2;
  const uint64_t mask = (uint64_t{1} << half) - 1;
  uint64_t x = i;
  do {
    uint64_t left = x >> half, right = x & mask;
    for (uint64_t round = 0; round < 6; ++round) {  // each round a bijection: (l, r) -> (r, l ^ f(r))
      const uint64_t f = mix64(key ^ mix64(round * 0x632BE59BD9B4E019ull + right)) & mask;
      const uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= n);  // a bijection of [0, 2^bits): walking its cycle from i reaches [0, n) again
  return x;
}

CounterRng::CounterRng(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  key_ = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  uint64_t stream = mix64(mix64(mix64(a) ^ b) ^ c);
  counter_ = {0u, 0u, static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
}

void CounterRng::refill() {
  block_ = philox4x32_10(counter_, key_);
  if (++counter_[0] == 0) ++counter_[1];
  used_ = 0;
}

void CounterRng::seek_block(uint64_t block) {
  counter_[0] = static_cast<uint32_t>(block);
  counter_[1] = static_cast<uint32_t>(block >> 32);
  used_ = 4;
  has_spare_normal_ = false;
}

uint32_t CounterRng::next_u32() {
  if (used_ == 4) refill();
  return block_[used_++];
}

uint64_t CounterRng::next_u64() {
  uint64_t hi = next_u32();
  return (hi << 32) | next_u32();
}

uint64_t CounterRng::below(uint64_t n) {
  // Lemire-style rejection to avoid modulo bias.
  uint64_t threshold = (0 - n) % n;
  for (;;) {
    uint64_t r = next_u64();
    if (r >= threshold) return r % n;
  }
}

double CounterRng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double CounterRng::normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  double u1 = uniform();
  double u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  double radius = std::sqrt(-2.0 * std::log(u1));
  double angle = 2.0 * M_PI * u2;
  spare_normal_ = radius * std::sin(angle);
  has_spare_normal_ = true;
  return radius * std::cos(angle);
}

}  // namespace rfa
