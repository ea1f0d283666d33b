#pragma once
// ModelSpec: the validated, resolved shape of a model (vocab size known, FFN
// width and positions resolved). Built once from the typed config; model code
// reads these ints instead of the option tree.
#include <string>

#include "config/config.h"

namespace rfa {

struct ModelSpec {
  ModelConfig model;          // vocab_size > 0 here
  AttentionConfig attention;
  int V = 0, C = 0, L = 0, H = 0, Dh = 0, Hf = 0;
  int D = 0;                  // random vectors per head (RFA kinds), 0 for softmax
  bool rope = false;
  bool is_rfa() const { return attention.kind != AttentionKind::softmax; }
  bool is_gated() const { return attention.kind == AttentionKind::rfa_gate; }
};

// Throws Error naming the offending option and the fix (e.g. d_model % n_heads != 0).
ModelSpec model_spec_make(const ModelConfig& model, const AttentionConfig& attention);

const char* attention_kind_name(AttentionKind kind);

}  // namespace rfa
