#include "decode/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"

namespace rfa {
namespace {

constexpr uint64_t kSamplerStream = 0x5a3b1e;  // keeps sampling draws apart from other streams of a seed

}  // namespace

void sampler_config_validate(const SamplerConfig& c) {
  if (c.greedy) return;
  if (!(c.temperature >= 0) || !std::isfinite(c.temperature))
    fail("--temperature {} must be a finite number >= 0 (0 = greedy; 0.8 is a common choice)", c.temperature);
  if (c.top_k < 0) fail("--top-k {} must be >= 0 (0 = no limit)", c.top_k);
  if (!(c.top_p > 0 && c.top_p <= 1)) fail("--top-p {} must be in (0, 1] (1 = no limit)", c.top_p);
}

Sampler::Sampler(int V, const SamplerConfig& config)
    : V_(V), config_(config), order_(static_cast<size_t>(V)), probs_(static_cast<size_t>(V)) {
  if (V <= 0) fail("sampler: vocabulary size {} must be positive", V);
  sampler_config_validate(config_);
}

int32_t Sampler::sample(const float* logits, uint64_t row, int64_t position) {
  int32_t best = 0;
  for (int i = 0; i < V_; ++i) {
    if (!std::isfinite(logits[i]))
      fail("logit of token {} is {} at position {} (row {}): the model produced a non-finite value; the "
           "checkpoint is broken or diverged",
           i, logits[i], position, row);
    if (logits[i] > logits[best]) best = i;
  }
  if (config_.greedy || config_.temperature == 0) return best;

  // Candidates, most likely first: top_k by partial selection, then sorted.
  std::iota(order_.begin(), order_.end(), 0);
  auto more_likely = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  int n = V_;
  if (config_.top_k > 0 && config_.top_k < V_) {
    n = config_.top_k;
    std::nth_element(order_.begin(), order_.begin() + (n - 1), order_.end(), more_likely);
  }
  std::sort(order_.begin(), order_.begin() + n, more_likely);
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
