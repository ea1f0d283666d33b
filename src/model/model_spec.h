#pragma once
// ModelSpec: the validated, resolved shape of a model (vocab size known, FFN
// width and positions resolved). Built once from the typed config; model code
// reads these ints instead of the option tree.
#include <string>

#include "attention/attention_spec.h"
#include "config/config.h"

namespace rfa {

struct ModelSpec {
  ModelConfig model;          // vocab_size > 0 here
  AttentionConfig attention;  // the options as given (dumped and saved with checkpoints)
  AttentionSpec attn;         // resolved once from them: what every attention call reads
  int V = 0, C = 0, L = 0, H = 0, Dh = 0, Hf = 0;
};

// Throws Error naming the offending option and the fix (e.g. d_model % n_heads != 0).
ModelSpec model_spec_make(const ModelConfig& model, const AttentionConfig& attention);

}  // namespace rfa
