#pragma once
// The small model and token streams the decoder-row tests share (decoder_rows_test,
// decoder_row_state_test): 2 layers, vocabulary kRowsV, a variant's attention.
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "support/attention_variants.h"
#include "support/tiny_model.h"

namespace rfa::test {

inline constexpr int kRowsV = 17;

inline ModelSpec rows_model_spec(const AttentionVariant& v) {
  Config c = tiny_config(AttentionKind::rfa_gate, {.vocab = kRowsV, .context = 16, .n_layers = 2, .num_features = 5,
                                                    .chunk_size = 4, .init_std = 0.3});
  c.attention.gate_bias_init = 0.5;
  v.apply(c);
  return tiny_spec(c);
}

// n tokens below kRowsV drawn from CounterRng(seed).
inline std::vector<int32_t> rows_tokens(uint64_t seed, int n) {
  CounterRng rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng.below(kRowsV));
  return t;
}

}  // namespace rfa::test
