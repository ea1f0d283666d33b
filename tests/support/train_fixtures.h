#pragma once
// What the training-session tests share: the model they step (L=2, C=32, H=2,
// T=16, F=8, chunks of 8) and in-memory 16-bit token streams to feed it.
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "data/token_file.h"
#include "support/tiny_model.h"

namespace rfa::test {

inline Config train_config(AttentionKind kind, int vocab) {
  return tiny_config(kind, {.vocab = vocab, .context = 16, .d_model = 32, .num_features = 8, .chunk_size = 8});
}

// train_config with V = 300 and a char tokenizer of 300 (the smallest vocab a tokenizer may
// have), so the config a checkpoint saves loads back; the tokens stay below 16.
inline Config train_config_saved(AttentionKind kind) {
  Config c = train_config(kind, 300);
  c.tokenizer.kind = TokenizerKind::character;
  c.tokenizer.vocab_size = 300;
  return c;
}

// n tokens drawn uniformly below 16.
inline std::vector<uint16_t> random_tokens(int64_t n, uint64_t seed) {
  CounterRng rng(seed);
  std::vector<uint16_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<uint16_t>(rng.below(16));
  return t;
}

// The whole of `tokens` (2 bytes each) as one split; it must outlive the split.
inline TokenSplit split_of(const std::vector<uint16_t>& tokens) {
  return TokenSplit(reinterpret_cast<const unsigned char*>(tokens.data()), 2, static_cast<int64_t>(tokens.size()),
                    static_cast<int64_t>(tokens.size()));
}

}  // namespace rfa::test
