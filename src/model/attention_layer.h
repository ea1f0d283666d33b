#pragma once
// The model's view of an attention core: one forward/backward pair that
// dispatches on spec.attention.kind to the softmax, RFA or RFA-Gate core of
// src/attention/. Validation and buffer sizing happen here; the cores neither
// validate nor allocate.
#include <cstdint>

#include "model/model_params.h"
#include "model/model_spec.h"

namespace rfa {

// Elements of the saved activations one layer keeps between forward and backward.
int64_t attention_layer_saved_size(const ModelSpec& spec, int B, int T);
// Elements of backward scratch (shared by all layers), for `threads` threads.
int64_t attention_layer_scratch_size(const ModelSpec& spec, int B, int T, int threads);

template <typename T>
struct AttentionLayerArgs {
  int B = 0, T_len = 0;
  const T* q = nullptr;       // (B, T, C) after rope
  const T* k = nullptr;       // (B, T, C) after rope
  const T* v = nullptr;       // (B, T, C)
  const T* n = nullptr;       // (B, T, C) the normed block input (RFA-Gate's gate reads it)
  const T* random = nullptr;  // (H, D, Dh) this layer's random matrices (RFA kinds)
  T* saved = nullptr;         // attention_layer_saved_size elements
  T* scratch = nullptr;       // attention_layer_scratch_size elements, shared by forward and backward
  int64_t scratch_size = 0;
};

// out: (B, T, C) overwritten.
template <typename T>
void attention_layer_forward(const ModelSpec& spec, const BlockWeights<T>& w, T* out,
                             const AttentionLayerArgs<T>& a);

// Adds (+=) into dq, dk, dv, dn (B, T, C) and into the layer's attention
// parameter gradients (sigma, gate_w, gate_b). dout: (B, T, C); out: the
// forward's output (B, T, C).
template <typename T>
void attention_layer_backward(const ModelSpec& spec, const BlockWeights<T>& w, const BlockWeights<T>& dw,
                              T* dq, T* dk, T* dv, T* dn, const T* dout, const T* out,
                              const AttentionLayerArgs<T>& a);

}  // namespace rfa
