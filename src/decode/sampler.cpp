#include "decode/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/error.h"
#include "core/parallel.h"
#include "core/rng.h"

namespace rfa {
namespace {

constexpr uint64_t kSamplerStream = 0x5a3b1e;  // keeps sampling draws apart from other streams of a seed

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

}  // namespace

void sampler_config_validate(const SamplerConfig& c) {
  if (c.greedy) return;
  if (!(c.temperature >= 0) || !std::isfinite(c.temperature))
    fail("--temperature {} must be a finite number >= 0 (0 = greedy; 0.8 is a common choice)", c.temperature);
  if (c.top_k < 0) fail("--top-k {} must be >= 0 (0 = no limit)", c.top_k);
  if (!(c.top_p > 0 && c.top_p <= 1)) fail("--top-p {} must be in (0, 1] (1 = no limit)", c.top_p);
}

int64_t sampler_rows_grain(int V) { return parallel_grain(int64_t(128) * V); }

Sampler::Sampler(int V, const SamplerConfig& config)
    : V_(V),
      config_(config),
      keys_(static_cast<size_t>(V)),
      sorted_(static_cast<size_t>(V)),
      order_(static_cast<size_t>(V)),
      probs_(static_cast<size_t>(V)) {
  if (V <= 0) fail("sampler: vocabulary size {} must be positive", V);
  sampler_config_validate(config_);
}

int32_t Sampler::sample(const float* logits, uint64_t row, int64_t position) {
  // The first of the largest logits (the best value kept in a register: comparing against
  // logits[best] chained every step to the load before it).
  int32_t best = 0;
  float best_logit = logits[0];
  for (int i = 0; i < V_; ++i) {
    const float x = logits[i];
    if (!std::isfinite(x))
      fail("logit of token {} is {} at position {} (row {}): the model produced a non-finite value; the "
           "checkpoint is broken or diverged",
           i, x, position, row);
    if (x > best_logit) {
      best_logit = x;
      best = i;
    }
  }
  if (config_.greedy || config_.temperature == 0) return best;

  // Candidates, most likely first (ties: the lower id): top_k by partial selection, then sorted.
  for (int i = 0; i < V_; ++i) keys_[static_cast<size_t>(i)] = candidate_key(logits[i], i);
  int n = V_;
  if (config_.top_k > 0 && config_.top_k < V_) {
    n = config_.top_k;
    std::partial_sort(keys_.begin(), keys_.begin() + n, keys_.end());  // a heap of the n best: O(V log n)
  } else {
    radix_sort_keys(keys_.data(), sorted_.data(), keys_.size());
  }
  for (int i = 0; i < n; ++i) order_[static_cast<size_t>(i)] = static_cast<int32_t>(keys_[static_cast<size_t>(i)]);
  // softmax(logits / temperature) over the candidates, in double.
  const double inv_t = 1.0 / config_.temperature, top = logits[order_[0]];
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
  CounterRng rng(config_.seed, kSamplerStream, row, static_cast<uint64_t>(position));
  double u = rng.uniform() * sum;
  for (int i = 0; i < n; ++i) {
    u -= probs_[static_cast<size_t>(i)];
    if (u < 0) return order_[static_cast<size_t>(i)];
  }
  return order_[static_cast<size_t>(n - 1)];  // rounding left u a hair above zero
}

}  // namespace rfa
