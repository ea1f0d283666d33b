#pragma once
// ModelSpec: the validated, resolved shape of a model (vocab size known, FFN
// width and positions resolved). Built once from the typed config; model code
// reads these ints instead of the option tree.
#include <string>
#include <vector>

#include "attention/attention_spec.h"
#include "config/config.h"

namespace rfa {

struct ModelSpec {
  ModelConfig model;          // vocab_size > 0 here
  AttentionConfig attention;  // the options as given (dumped and saved with checkpoints)
  std::vector<AttentionSpec> attn;  // (L) each layer's, resolved once from them (attention.layers):
                                    // what every attention call of that layer reads
  int V = 0, C = 0, L = 0, H = 0, Dh = 0, Hf = 0;
  // Every layer's attention alike (no attention.layers, or a list of equal entries).
  bool attn_uniform() const;
  // Any layer's attention's decoding state grows with the text (a KV cache).
  bool attn_state_grows() const;
};

// Throws Error naming the offending option and the fix (e.g. d_model % n_heads != 0).
ModelSpec model_spec_make(const ModelConfig& model, const AttentionConfig& attention);

// "rfa_gate" when every layer has that kind; else the layers in order, "rfa_gate x3, softmax": for logs.
std::string model_spec_attention_text(const ModelSpec& spec);
// The kinds alone, without the short convolution: "rfa_gate", "rfa_gate x3, softmax".
std::string model_spec_kinds_text(const ModelSpec& spec);

}  // namespace rfa
