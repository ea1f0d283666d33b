#include "model/model_params.h"

#include <string>

#include "core/error.h"

namespace rfa {
namespace {

std::string layer_name(int l, const char* what) { return "layers." + std::to_string(l) + "." + what; }

}  // namespace

ParamTable model_param_table(const ModelSpec& s) {
  ParamTable t;
  t.add("tok_embedding", {s.V, s.C}, true);
  for (int l = 0; l < s.L; ++l) {
    t.add(layer_name(l, "attn_norm"), {s.C}, false);
    for (const char* w : {"attn.wq", "attn.wk", "attn.wv", "attn.wo"}) t.add(layer_name(l, w), {s.C, s.C}, true);
    if (s.is_rfa()) t.add(layer_name(l, "attn.sigma"), {s.H, s.Dh}, false);
    if (s.is_gated()) {
      t.add(layer_name(l, "attn.gate_w"), {s.H, s.C}, true);
      t.add(layer_name(l, "attn.gate_b"), {s.H}, false);
    }
    t.add(layer_name(l, "ffn_norm"), {s.C}, false);
    t.add(layer_name(l, "ffn.w13"), {2 * int64_t(s.Hf), s.C}, true);
    t.add(layer_name(l, "ffn.w2"), {s.Hf, s.C}, true);  // input-major: see model_params.h
  }
  t.add("final_norm", {s.C}, false);
  if (!s.model.tie_embeddings) t.add("lm_head", {s.V, s.C}, true);
  return t;
}

template <typename T>
ModelWeights<T> model_weights_view(const ModelSpec& s, const ParamTable& t, T* base) {
  auto at = [&](const std::string& name) { return base + t.get(name).offset; };
  auto opt = [&](const std::string& name) -> T* {
    const ParamEntry* e = t.find(name);
    return e ? base + e->offset : nullptr;
  };
  ModelWeights<T> w;
  w.tok_embedding = at("tok_embedding");
  w.layers.resize(static_cast<size_t>(s.L));
  for (int l = 0; l < s.L; ++l) {
    BlockWeights<T>& b = w.layers[static_cast<size_t>(l)];
    b.attn_norm = at(layer_name(l, "attn_norm"));
    b.wq = at(layer_name(l, "attn.wq"));
    b.wk = at(layer_name(l, "attn.wk"));
    b.wv = at(layer_name(l, "attn.wv"));
    b.wo = at(layer_name(l, "attn.wo"));
    b.sigma = opt(layer_name(l, "attn.sigma"));
    b.gate_w = opt(layer_name(l, "attn.gate_w"));
    b.gate_b = opt(layer_name(l, "attn.gate_b"));
    b.ffn_norm = at(layer_name(l, "ffn_norm"));
    b.w13 = at(layer_name(l, "ffn.w13"));
    b.w2 = at(layer_name(l, "ffn.w2"));
  }
  w.final_norm = at("final_norm");
  w.lm_head = s.model.tie_embeddings ? w.tok_embedding : at("lm_head");
  return w;
}

template ModelWeights<float> model_weights_view(const ModelSpec&, const ParamTable&, float*);
template ModelWeights<double> model_weights_view(const ModelSpec&, const ParamTable&, double*);

}  // namespace rfa
