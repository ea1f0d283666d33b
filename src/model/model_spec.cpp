#include "model/model_spec.h"

#include "core/error.h"

namespace rfa {

ModelSpec model_spec_make(const ModelConfig& model, const AttentionConfig& attention) {
  if (model.vocab_size <= 0)
    fail("model.vocab_size is {}; set it or let the tokenizer provide it before building the model",
         model.vocab_size);
  if (model.n_layers <= 0) fail("model.n_layers is {}; use at least 1", model.n_layers);
  if (model.d_model <= 0 || model.n_heads <= 0 || model.d_model % model.n_heads != 0)
    fail("model.d_model {} must be a positive multiple of model.n_heads {}", model.d_model, model.n_heads);
  if (model.context_length <= 0) fail("model.context_length is {}; use at least 1", model.context_length);
  ModelSpec s;
  s.model = model;
  s.attention = attention;
  s.V = model.vocab_size;
  s.C = model.d_model;
  s.L = model.n_layers;
  s.H = model.n_heads;
  s.Dh = config_head_size(model);
  s.Hf = config_ffn_hidden(model);
  s.attn = attention_spec_make(attention, s.H, s.Dh);
  if (s.attn.rope && s.Dh % 2 != 0)
    fail("rope needs an even head size; d_model {} / n_heads {} = {}", s.C, s.H, s.Dh);
  return s;
}

}  // namespace rfa
