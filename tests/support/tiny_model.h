#pragma once
// The tiny models the tests build: one place that turns a handful of sizes into
// a Config / ModelSpec for each attention kind. A knob left alone keeps the
// size most tests use (L=2, C=16, H=2) or, for init_std, chunk_size and
// tie_embeddings, the library default; anything rarer (feature map, positions,
// ffn_hidden, gate and sigma init) the test sets on the returned Config.
// Call with designated initialisers: tiny_spec(kind, {.vocab = 29, .context = 16}).
#include "config/config.h"
#include "model/model_spec.h"

namespace rfa::test {

struct TinyModel {
  int vocab = 13;                                  // V
  int context = 8;                                 // T
  int d_model = 16;                                // C
  int n_heads = 2;                                 // H
  int n_layers = 2;                                // L
  int num_features = 4;                            // F random vectors per head
  int chunk_size = AttentionConfig{}.chunk_size;
  double init_std = ModelConfig{}.init_std;
  bool tied = ModelConfig{}.tie_embeddings;
};

inline Config tiny_config(AttentionKind kind, const TinyModel& t = {}) {
  Config c;
  c.model.vocab_size = t.vocab;
  c.model.context_length = t.context;
  c.model.d_model = t.d_model;
  c.model.n_heads = t.n_heads;
  c.model.n_layers = t.n_layers;
  c.model.init_std = t.init_std;
  c.model.tie_embeddings = t.tied;
  c.attention.kind = kind;
  c.attention.num_features = t.num_features;
  c.attention.chunk_size = t.chunk_size;
  return c;
}

inline ModelSpec tiny_spec(const Config& c) { return model_spec_make(c.model, c.attention); }
inline ModelSpec tiny_spec(AttentionKind kind, const TinyModel& t = {}) { return tiny_spec(tiny_config(kind, t)); }

}  // namespace rfa::test
