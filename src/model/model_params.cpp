#include "model/model_params.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace rfa {
namespace {

std::string layer_name(int l, const char* what) { return "layers." + std::to_string(l) + "." + what; }

}  // namespace

ParamTable model_param_table(const ModelSpec& s) {
  const ParamInit one = ParamInit::constant(1.0), normal = ParamInit::normal(1.0),
                  residual = ParamInit::normal(1.0 / std::sqrt(2.0 * s.L));  // wo, w2
  const bool gemm = true;  // grad_by_gemm: the weight matrices' gradients come whole from one gemm
  ParamTable t;
  // Tied, the embedding's gradient starts as lm_head's gemm (the scatter-add follows).
  t.add("tok_embedding", {s.V, s.C}, true, normal, s.model.tie_embeddings);
  for (int l = 0; l < s.L; ++l) {
    t.add(layer_name(l, "attn_norm"), {s.C}, false, one);
    for (const char* w : {"attn.wq", "attn.wk", "attn.wv"}) t.add(layer_name(l, w), {s.C, s.C}, true, normal, gemm);
    t.add(layer_name(l, "attn.wo"), {s.C, s.C}, true, residual, gemm);
    for (const AttentionParam& p : attention_params(s.attn[static_cast<size_t>(l)]))
      t.add(layer_name(l, "attn.") + p.name, p.shape, p.decay, p.init);
    t.add(layer_name(l, "ffn_norm"), {s.C}, false, one);
    t.add(layer_name(l, "ffn.w13"), {2 * int64_t(s.Hf), s.C}, true, normal, gemm);
    t.add(layer_name(l, "ffn.w2"), {s.Hf, s.C}, true, residual, gemm);  // input-major: see model_params.h
  }
  t.add("final_norm", {s.C}, false, one);
  if (!s.model.tie_embeddings) t.add("lm_head", {s.V, s.C}, true, normal, gemm);
  return t;
}

template <typename T>
ModelWeights<T> model_weights_view(const ModelSpec& s, const ParamTable& t, T* base) {
  auto at = [&](const std::string& name) { return base + t.get(name).offset; };
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
    b.attn = attention_weights_view(s.attn[static_cast<size_t>(l)], t, layer_name(l, "attn."), base);
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
