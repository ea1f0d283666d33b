#pragma once
// Config -> parameter table, and typed views of one flat array (parameters or
// gradients: same layout) as per-layer pointers.
#include <vector>

#include "attention/attention_core.h"
#include "model/model_spec.h"
#include "tensor/param_table.h"

namespace rfa {

// Names: tok_embedding (V,C); layers.{l}.attn_norm (C); layers.{l}.attn.wq|wk|wv|wo (C,C);
// the attention's own tensors layers.{l}.attn.* (attention_params of layer l's spec: RFA sigma
// (H,Dh); RFA-Gate also gate_w (H,C), gate_b (H)); layers.{l}.ffn_norm (C); layers.{l}.ffn.w13 (2Hf,C) rows
// [W1|W3]; layers.{l}.ffn.w2 (Hf,C) input-major (x_out += act · w2: sgemm runs ~15-25% faster
// on K = Hf without the transpose); final_norm (C); lm_head (V,C) only when untied.
// Decay: exactly the rank-2 tensors. Init (ParamInit): norms 1; matrices normal(0, init_std),
// wo and w2 scaled by 1/sqrt(2L); the attention's as attention_params says.
ParamTable model_param_table(const ModelSpec& spec);

template <typename T>
struct BlockWeights {
  T* attn_norm = nullptr;  // (C)
  T* wq = nullptr;         // (C, C)
  T* wk = nullptr;         // (C, C)
  T* wv = nullptr;         // (C, C)
  T* wo = nullptr;         // (C, C)
  AttentionWeights<T> attn;  // the attention's own tensors (attention_params), null where none
  T* ffn_norm = nullptr;   // (C)
  T* w13 = nullptr;        // (2Hf, C)
  T* w2 = nullptr;         // (Hf, C)  input-major, unlike the other matrices
};

// A block's weight matrices packed for the decoder's batch-invariant products
// (kernels/step_gemm.h, decode/step_weights.h).
template <typename T>
struct StepLayerWeights {
  const T *wq = nullptr, *wk = nullptr, *wv = nullptr, *wo = nullptr, *w13 = nullptr, *w2 = nullptr;  // null for
                                                                                                     // StepPack::gates
  const T* gate = nullptr;  // the output gate's W_g; null without one
};

template <typename T>
struct ModelWeights {
  T* tok_embedding = nullptr;  // (V, C)
  std::vector<BlockWeights<T>> layers;
  T* final_norm = nullptr;     // (C)
  T* lm_head = nullptr;        // (V, C); equals tok_embedding when tied
};

// Pointers into `base` (length table.size()) following the table's offsets.
template <typename T>
ModelWeights<T> model_weights_view(const ModelSpec& spec, const ParamTable& table, T* base);

}  // namespace rfa
