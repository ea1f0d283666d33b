#pragma once
// Choosing the next token from logits (V): greedy (argmax), or sampling at a
// temperature after top-k and/or top-p (nucleus) filtering. The random draw for
// (row, position) is CounterRng(seed, kSamplerStream, row, position), a pure
// function of its key: the same seed gives the same text, whatever the batch
// or thread count, and a generation can continue from a saved state.
// Scratch (V) is allocated once by the constructor; sample() never allocates.
// Non-finite logits are an error (they mean a broken model), never a random token.
#include <cstdint>
#include <vector>

namespace rfa {

struct SamplerConfig {
  bool greedy = false;       // argmax; also when temperature == 0
  double temperature = 0.8;  // > 0 unless greedy
  int top_k = 40;            // keep the k most likely tokens; 0 = all
  double top_p = 0.95;       // keep the smallest set with probability >= p; 1 = all
  uint64_t seed = 0;
};

// Throws Error naming the option and the allowed range.
void sampler_config_validate(const SamplerConfig& c);
// The grain (parallel_grain, core/parallel.h) for sampling rows side by side on the pool, each
// with its own Sampler: a row at V 2048 without top-k takes about 20 µs, counted as 128
// multiply-adds a candidate (so 8 rows of V 300 fork, and every row of V 2048).
int64_t sampler_rows_grain(int V);

class Sampler {
 public:
  Sampler(int V, const SamplerConfig& config);

  // The token for batch row `row` at absolute `position`. Throws Error if a logit is NaN or inf.
  int32_t sample(const float* logits /*(V)*/, uint64_t row, int64_t position);

  const SamplerConfig& config() const { return config_; }

 private:
  int V_;
  SamplerConfig config_;
  std::vector<uint64_t> keys_;    // (V) candidates as sortable keys (sampler.cpp candidate_key)
  std::vector<uint64_t> sorted_;  // (V) the radix sort's second buffer
  std::vector<int32_t> order_;  // (V) candidate ids, most likely first
  std::vector<double> probs_;   // (V) their probabilities, in that order
};

}  // namespace rfa
