#include "model/model_spec.h"

#include "attention/attention_core.h"
#include "config/config_enums.h"
#include "config/config_layers.h"
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
  for (const AttentionConfig& layer : config_attention_layers(attention, s.L)) {
    s.attn.push_back(attention_spec_make(layer, s.H, s.Dh));
    s.attn.back().norm_eps = model.norm_eps;  // the output norm's (attention.output_gate)
    if (s.attn.back().rope && s.Dh % 2 != 0)
      fail("rope needs an even head size; d_model {} / n_heads {} = {}", s.C, s.H, s.Dh);
  }
  return s;
}

bool ModelSpec::attn_uniform() const {
  for (const AttentionSpec& a : attn)
    if (!(a == attn[0])) return false;
  return true;
}

bool ModelSpec::attn_state_grows() const {
  for (const AttentionSpec& a : attn)
    if (attention_state_grows(a)) return true;
  return false;
}

std::string model_spec_attention_text(const ModelSpec& s) {
  const int conv = s.attn.empty() ? 0 : s.attn[0].short_conv;
  bool same_conv = true;
  for (const AttentionSpec& a : s.attn) same_conv = same_conv && a.short_conv == conv;
  const std::string suffix = !same_conv ? " (short_conv per layer)"
                             : conv > 0 ? fmt::format(" (short_conv {})", conv)
                                        : std::string();
  int gated = 0;  // layers with attention.output_gate
  for (const AttentionSpec& a : s.attn) gated += a.output_gate ? 1 : 0;
  const std::string gate = gated == 0                      ? std::string()
                           : gated == int(s.attn.size()) ? " (output gate)"
                                                           : " (output gate per layer)";
  return model_spec_kinds_text(s) + suffix + gate;
}

std::string model_spec_kinds_text(const ModelSpec& s) {
  std::string out;
  // A kind with a trained sliding window reads "softmax window 16".
  auto name = [&](const AttentionSpec& a) {
    return a.window > 0 ? fmt::format("{} window {}", enum_name(a.kind), a.window) : std::string(enum_name(a.kind));
  };
  for (size_t l = 0; l < s.attn.size();) {
    size_t run = 1;  // layers of the same kind (and window) in a row
    while (l + run < s.attn.size() && s.attn[l + run].kind == s.attn[l].kind &&
           s.attn[l + run].window == s.attn[l].window)
      ++run;
    if (run == s.attn.size()) return name(s.attn[l]);
    out += fmt::format("{}{}{}", out.empty() ? "" : ", ", name(s.attn[l]),
                       run > 1 ? fmt::format(" x{}", run) : std::string());
    l += run;
  }
  return out;
}

}  // namespace rfa
