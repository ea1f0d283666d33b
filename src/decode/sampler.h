#pragma once
// Choosing the next token from logits (V): greedy (argmax), or sampling at a
// temperature after top-k and/or top-p (nucleus) filtering. The random draw for
// (row, position) is CounterRng(seed, kSamplerStream, row, position), a pure
// function of its key: the same seed gives the same text, whatever the batch
// or thread count, and a generation can continue from a saved state.
// Scratch (V) is allocated once by the constructor; sample() never allocates.
// Non-finite logits are an error (they mean a broken model), never a random token.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rfa {

class CounterRng;

struct SamplerConfig {
  bool greedy = false;       // argmax; also when temperature == 0
  double temperature = 0.8;  // > 0 unless greedy
  int top_k = 40;            // keep the k most likely tokens; 0 = all
  double top_p = 0.95;       // keep the smallest set with probability >= p; 1 = all
  uint64_t seed = 0;
};

// Throws Error naming the option and the allowed range.
void sampler_config_validate(const SamplerConfig& c);
// The grain (parallel_grain, core/parallel.h) for sampling `rows` side by side on the pool, each
// with its own Sampler, from the sum of their row_work(): the rows fork when together they
// outweigh a fork.
int64_t sampler_rows_grain(int64_t rows, int64_t total_work);

class Sampler {
 public:
  Sampler(int V, const SamplerConfig& config);

  // The token for batch row `row` at absolute `position`. Throws Error if a logit is NaN or inf.
  int32_t sample(const float* logits /*(V)*/, uint64_t row, int64_t position);

  const SamplerConfig& config() const { return config_; }

  // One sample's work in multiply-adds of the same time (core/parallel.h's scale, about 65 a
  // nanosecond), per candidate: 4 greedy (the argmax), 32 without a cut (V 2048: ~1.2 µs on Zen 5),
  // 64 with top-k (~1.9 µs), 128 with top-p alone (the nucleus's sort: ~6 µs).
  int64_t row_work() const;

 private:
  // The cuts: top-k (in double, over the k in order), or none / top-p over the whole
  // vocabulary (float weights in id order; only the nucleus's candidates sorted).
  int32_t sample_top_k(const float* logits, int32_t best, CounterRng& rng);
  // Writes to keys_ the candidates that can be among the top k (at least k), returns their count.
  size_t top_k_candidates(const float* logits);
  int32_t sample_all(const float* logits, int32_t best, CounterRng& rng);
  int32_t sample_nucleus(const float* logits, double total, CounterRng& rng);

  int V_;
  SamplerConfig config_;
  std::vector<uint64_t> keys_;    // (V) candidates as sortable keys (sampler.cpp candidate_key)
  std::vector<uint64_t> sorted_;  // (V) the radix sort's second buffer
  std::vector<int32_t> order_;  // (V) candidate ids, most likely first
  std::vector<double> probs_;   // (V) their probabilities, in that order
  std::vector<float> weights_;  // (V) e^((logit - best) / T) in id order (no top-k); top-k: block maxima
  std::vector<float> block_sums_;  // (ceil(V / 128)) the weights' sums, block by block
};

}  // namespace rfa
