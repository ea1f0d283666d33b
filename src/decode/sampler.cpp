#include "decode/sampler.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <functional>

#include "core/error.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "kernels/logit_rows.h"
#include "kernels/simd_exp.h"
#include "kernels/vector_math.h"

namespace rfa {
namespace {

constexpr uint64_t kSamplerStream = 0x5a3b1e;  // keeps sampling draws apart from other streams of a seed

// Weights per block of the whole-vocabulary walk: the draw skips whole blocks by their sums, then
// walks one block's weights (V 32,000: 250 block sums and at most 128 weights instead of 32,000).
constexpr int kWalkBlock = 128;

// e^x below this is left out (weight 0): exp_approx clamps there (kernels/fast_exp.h), and a token
// e^87 times less likely than the best one is never drawn anyway.
constexpr float kWeightFloor = -87.3f;

// A candidate as one integer whose ascending order is "most likely first": the logit's bits mapped
// to an order-reversing unsigned key above the token id, so ties go to the lower id. -0 counts as
// +0 (they compare equal as floats). Sorting these plain integers gives the order a comparator on
// (logits[a], a) gives, without reading the logits through the ids on every comparison (a sort of
// 32,000 candidates that way took 3 ms a token).
uint64_t candidate_key(float logit, int32_t id) {
  const uint32_t bits = std::bit_cast<uint32_t>(logit == 0.0f ? 0.0f : logit);
  const uint32_t ascending = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);  // orders as the floats
  return (uint64_t(~ascending) << 32) | uint32_t(id);
}

int32_t candidate_id(uint64_t key) { return static_cast<int32_t>(static_cast<uint32_t>(key)); }

// Sorts keys[0, n) ascending by their upper 32 bits, stably: keys written in id order come out in
// candidate_key's order, ties by id. LSD radix, four passes of 8 bits through tmp (n): O(n), where
// a comparison sort of 32,000 random logits spent 1.4 ms mostly in mispredicted branches.
void radix_sort_keys(uint64_t* keys, uint64_t* tmp, size_t n) {
  for (int shift = 32; shift < 64; shift += 8) {
    size_t start[257] = {};
    for (size_t i = 0; i < n; ++i) ++start[((keys[i] >> shift) & 255u) + 1];
    for (int d = 0; d < 256; ++d) start[d + 1] += start[d];
    for (size_t i = 0; i < n; ++i) tmp[start[(keys[i] >> shift) & 255u]++] = keys[i];
    std::swap(keys, tmp);
  }
  // Four passes: the sorted keys are back in the first buffer.
}

// w[i] = e^((logits[i] - top) inv_t) in float, 0 below e^kWeightFloor; w[best] = 1. Registers
// from logits[0] whatever the address, then the tail: each weight's bits depend on V and the
// logit only, never on where the row sits in a batch.
void temperature_weights(const float* logits, float top, float inv_t, float* w, int V) {
  using Vf = Simd<float>::V;
  constexpr int W = Simd<float>::W;
  int i = 0;
  for (; i + W <= V; i += W) {
    const Vf x = (Vf(simd_load(logits + i)) - top) * inv_t;
    const Vf e = simd_exp<float>(x);
    simd_store(w + i, Vf(x < kWeightFloor ? Vf{} : e));
  }
  for (; i < V; ++i) {
    const float x = (logits[i] - top) * inv_t;
    w[i] = x < kWeightFloor ? 0.0f : exp_approx(x);
  }
}

}  // namespace

void sampler_config_validate(const SamplerConfig& c) {
  if (c.greedy) return;
  if (!(c.temperature >= 0) || !std::isfinite(c.temperature))
    fail("--temperature {} must be a finite number >= 0 (0 = greedy; 0.8 is a common choice)", c.temperature);
  if (c.top_k < 0) fail("--top-k {} must be >= 0 (0 = no limit)", c.top_k);
  if (!(c.top_p > 0 && c.top_p <= 1)) fail("--top-p {} must be in (0, 1] (1 = no limit)", c.top_p);
}

int64_t sampler_rows_grain(int64_t rows, int64_t total_work) {
  return parallel_grain(rows > 0 ? (total_work + rows - 1) / rows : total_work);
}

int64_t Sampler::row_work() const {
  const bool greedy = config_.greedy || config_.temperature == 0;
  const bool top_k = config_.top_k > 0 && config_.top_k < V_;
  return int64_t(V_) * (greedy ? 4 : top_k ? 64 : config_.top_p < 1 ? 128 : 32);
}

Sampler::Sampler(int V, const SamplerConfig& config)
    : V_(V),
      config_(config),
      keys_(static_cast<size_t>(V)),
      sorted_(static_cast<size_t>(V)),
      order_(static_cast<size_t>(V)),
      probs_(static_cast<size_t>(V)),
      weights_(static_cast<size_t>(V)),
      block_sums_(static_cast<size_t>((V + kWalkBlock - 1) / kWalkBlock)) {
  if (V <= 0) fail("sampler: vocabulary size {} must be positive", V);
  sampler_config_validate(config_);
}

int32_t Sampler::sample(const float* logits, uint64_t row, int64_t position) {
  // The first of the largest logits. Every logit must be finite: checked beside the maximum in one
  // vectorised pass, the offender looked up only when there is one.
  const LogitsMax lm = logits_max(logits, V_);
  if (!lm.finite) {
    const int i = logits_first_non_finite(logits, V_);
    fail("logit of token {} is {} at position {} (row {}): the model produced a non-finite value; the "
         "checkpoint is broken or diverged",
         i, logits[i], position, row);
  }
  const int32_t best = logits_first_index(logits, V_, lm.max);
  if (config_.greedy || config_.temperature == 0) return best;
  CounterRng rng(config_.seed, kSamplerStream, row, static_cast<uint64_t>(position));
  if (config_.top_k > 0 && config_.top_k < V_) return sample_top_k(logits, best, rng);
  return sample_all(logits, best, rng);
}

size_t Sampler::top_k_candidates(const float* logits) {
  // Blocks of bs tokens (a power of two, whole registers), about 4k of them. The k-th largest block
  // maximum theta has a logit at least as large in each of k blocks, so the k largest logits are
  // all >= theta, and they sit in blocks whose maximum is >= theta: only those blocks are keyed,
  // and only their tokens >= theta (V 32,000, k 40: about 5,000 logits read twice, not 32,000 keyed).
  using Vf = Simd<float>::V;
  constexpr int W = Simd<float>::W;
  const int k = config_.top_k;
  int bs = W;
  while (int64_t(bs) * 2 * 4 * k <= V_ && bs < 1024) bs *= 2;
  const int blocks = V_ / bs;  // whole blocks; the last V % bs tokens are filtered one by one
  size_t m = 0;
  if (blocks < 2 * k) {
    for (int i = 0; i < V_; ++i) keys_[m++] = candidate_key(logits[i], i);
    return m;
  }
  float* block_max = weights_.data();           // (blocks)
  float* selection = weights_.data() + blocks;  // (blocks), reordered by nth_element; 2 blocks <= V
  for (int b = 0; b < blocks; ++b) {
    const float* x = logits + static_cast<size_t>(b) * bs;
    Vf r = simd_load(x);
    for (int j = W; j < bs; j += W) {
      const Vf y = simd_load(x + j);
      r = y > r ? y : r;
    }
    block_max[b] = simd_max<float>(r);
  }
  std::copy(block_max, block_max + blocks, selection);
  std::nth_element(selection, selection + (k - 1), selection + blocks, std::greater<float>());
  const float theta = selection[k - 1];
  for (int b = 0; b < blocks; ++b)
    if (block_max[b] >= theta)
      for (int i = b * bs; i < (b + 1) * bs; ++i)
        if (logits[i] >= theta) keys_[m++] = candidate_key(logits[i], i);
  for (int i = blocks * bs; i < V_; ++i)
    if (logits[i] >= theta) keys_[m++] = candidate_key(logits[i], i);
  return m;
}

int32_t Sampler::sample_top_k(const float* logits, int32_t best, CounterRng& rng) {
  // The k most likely, in order (ties: the lower id), by a heap of the k best among the candidates.
  const size_t m = top_k_candidates(logits);
  int n = config_.top_k;
  std::partial_sort(keys_.begin(), keys_.begin() + n, keys_.begin() + static_cast<std::ptrdiff_t>(m));
  for (int i = 0; i < n; ++i) order_[static_cast<size_t>(i)] = candidate_id(keys_[static_cast<size_t>(i)]);
  // softmax(logits / temperature) over the k, in double.
  const double inv_t = 1.0 / config_.temperature, top = logits[best];
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    probs_[static_cast<size_t>(i)] = std::exp((double(logits[order_[static_cast<size_t>(i)]]) - top) * inv_t);
    sum += probs_[static_cast<size_t>(i)];
  }
  // top_p: the shortest prefix whose mass reaches p (at least one token).
  if (config_.top_p < 1) {
    double mass = 0;
    int keep = 0;
    while (keep < n) {
      mass += probs_[static_cast<size_t>(keep++)];
      if (mass >= config_.top_p * sum) break;
    }
    n = keep;
    sum = mass;
  }
  double u = rng.uniform() * sum;
  for (int i = 0; i < n; ++i) {
    u -= probs_[static_cast<size_t>(i)];
    if (u < 0) return order_[static_cast<size_t>(i)];
  }
  return order_[static_cast<size_t>(n - 1)];  // rounding left u a hair above zero
}

int32_t Sampler::sample_all(const float* logits, int32_t best, CounterRng& rng) {
  // Weights in id order, vectorised; float is plenty for a draw (relative error ~1e-7 a weight).
  // 1 / temperature capped at FLT_MAX: a temperature of 1e-300 must not make 0 x inf at the best.
  const float inv_t = static_cast<float>(std::min(1.0 / config_.temperature, double(FLT_MAX)));
  float* w = weights_.data();
  temperature_weights(logits, logits[best], inv_t, w, V_);
  const int blocks = static_cast<int>(block_sums_.size());
  double total = 0;
  for (int b = 0; b < blocks; ++b) {
    const int start = b * kWalkBlock;
    block_sums_[static_cast<size_t>(b)] = sum(w + start, std::min(kWalkBlock, V_ - start));
    total += block_sums_[static_cast<size_t>(b)];
  }
  if (config_.top_p < 1) return sample_nucleus(logits, total, rng);
  // No cut: the draw's inverse CDF in id order, whole blocks first. A block's sum (in registers)
  // and its walk (in order) round differently, so the walk may run a hair past a block's end
  // into the next; the fallback is the last token of positive weight.
  double u = rng.uniform() * total;
  int b = 0;
  while (b + 1 < blocks && u >= block_sums_[static_cast<size_t>(b)]) u -= block_sums_[static_cast<size_t>(b++)];
  for (int i = b * kWalkBlock; i < V_; ++i) {
    u -= w[i];
    if (w[i] > 0 && u < 0) return i;
  }
  int32_t last = V_ - 1;
  while (last > best && !(w[last] > 0)) --last;
  return last;
}

int32_t Sampler::sample_nucleus(const float* logits, double total, CounterRng& rng) {
  // top_p: the shortest prefix, most likely first, whose mass reaches p. A token of weight below
  // tau = (1 - p) total / (2 V) is never in it: every token ranked at or after it weighs no more
  // (to exp's rounding), V of them less than (1 - p) total / 2, so the tokens before it already
  // hold more than p of the mass. Only the tokens at or above tau are sorted, usually a few
  // hundred of a vocabulary of thousands.
  const float* w = weights_.data();
  const float tau = static_cast<float>((1 - config_.top_p) * total / (2.0 * V_));
  size_t m = 0;
  for (int i = 0; i < V_; ++i)
    if (w[i] >= tau) keys_[m++] = candidate_key(logits[i], i);
  if (m <= 64)
    std::sort(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(m));
  else
    radix_sort_keys(keys_.data(), sorted_.data(), m);
  const double needed = config_.top_p * total;
  double mass = 0;
  size_t n = 0;
  while (n < m) {
    mass += w[candidate_id(keys_[n++])];
    if (mass >= needed) break;
  }
  double u = rng.uniform() * mass;
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = candidate_id(keys_[i]);
    u -= w[id];
    if (u < 0) return id;
  }
  return candidate_id(keys_[n - 1]);  // rounding left u a hair above zero
}

}  // namespace rfa
