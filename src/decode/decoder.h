#pragma once
// Autoregressive decoding over the whole model. A prompt is prefilled with the
// parallel (chunked) form, which leaves each layer's state; then every new token
// is one recurrent step per layer:
//   RFA kinds: state S (B, H, F, Dh+1) per layer, O(F·Dh) work and memory per
//              head and token whatever the position; no length limit.
//   softmax:   a KV cache per layer (B, H, max_positions, Dh), O(t) per token;
//              with a window W, a ring cache (B, H, W, Dh) of the last W
//              positions, O(W) per token (softmax_kv_cache.h).
// Uses the model's FIXED evaluation random matrices, copied (transposed, for the
// step's feature map) at construction: build the decoder after loading the
// weights. Other weights are read live from the model. Everything (activations of
// one segment, states or caches, the RoPE table) is allocated by the
// constructor; prefill() and step() never allocate.
//
// Per block, as in model/block.h (pre-norm, SwiGLU):
//   n = RMSNorm(x);  x += Wo · Attn(Wq n, Wk n, Wv n);  m = RMSNorm(x);  x += W2 · swiglu(W13 m)
#include <cstdint>
#include <vector>

#include "attention/rfa_attention.h"
#include "attention/rfa_recurrent.h"
#include "attention/softmax_kv_cache.h"
#include "layers/rope.h"
#include "model/model.h"
#include "tensor/arena.h"

namespace rfa {

struct DecoderOptions {
  int batch = 1;               // B sequences decoded in lockstep
  int max_segment = 256;       // most tokens per prefill() call (longer prompts go in pieces)
  int64_t max_positions = 0;   // softmax: positions to decode (prompt + generated; the RoPE table and,
                               // without a window, the KV cache); RFA kinds: unused
  int window = 0;              // softmax: attend over the last `window` positions (a ring KV cache of
                               // min(window, max_positions) slots); 0 = the whole text. RFA kinds: unused
};

template <typename T>
class Decoder {
 public:
  Decoder(Model<T>& model, const DecoderOptions& options);
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  void reset();  // empty state, position 0

  // Runs S <= max_segment tokens per row through the parallel form, continuing
  // from the current state. tokens: (B, S). Returns the logits (B, S, V), valid
  // until the next call.
  const T* prefill(const int32_t* tokens, int S);
  // One token per row, one recurrent step per layer. tokens: (B). Returns (B, V).
  const T* step(const int32_t* tokens);
  // The whole prompt (B, T) in segments of max_segment; returns the logits of its
  // last position (B, V) (row b at stride V).
  const T* prefill_all(const int32_t* tokens, int64_t T_len);
  // Logits (B, V) of the last position seen by the latest prefill/step; null before any.
  const T* last_logits() const { return last_logits_; }
  // Puts back last-position logits (B, V), e.g. from a saved generation.
  void last_logits_restore(const T* logits);

  int64_t position() const { return position_; }
  int batch() const { return B_; }
  int vocab() const { return spec_.V; }
  int max_segment() const { return S_max_; }
  const ModelSpec& spec() const { return spec_; }
  // Bytes of per-sequence state in use now (RFA: fixed; softmax: grows with position).
  int64_t state_bytes() const;
  // Bytes reserved for state (softmax: the whole cache).
  int64_t state_capacity_bytes() const;

  // The RFA layers' states (L), for saving/restoring a generation; empty for softmax.
  std::vector<RfaState<T>>& rfa_states() { return rfa_; }
  const std::vector<RfaState<T>>& rfa_states() const { return rfa_; }
  std::vector<KvCache<T>>& kv_caches() { return kv_; }
  void set_position(int64_t p);  // after restoring states (RFA) / truncating caches (softmax)

 private:
  const T* run(const int32_t* tokens, int S, bool recurrent);
  void attention(int l, int S, bool recurrent);
  void step_layers(const int32_t* tokens);  // (B)

  Model<T>& model_;
  ModelSpec spec_;
  int B_ = 0, S_max_ = 0;
  int64_t position_ = 0;
  int64_t max_positions_ = 0;       // softmax: the bound on position_
  RfaConfig rfa_config_;
  RopeTable rope_;                  // when spec.rope: softmax max_positions rows; RFA max_segment rows, rebased
  std::vector<RfaState<T>> rfa_;    // (L)
  std::vector<KvCache<T>> kv_;      // (L)
  Arena<T> arena_;
  T* x_ = nullptr;        // (B, S, C) residual stream
  T* n_ = nullptr;        // (B, S, C) normed input of the current sublayer
  T* q_ = nullptr;        // (B, S, C)
  T* k_ = nullptr;        // (B, S, C)
  T* v_ = nullptr;        // (B, S, C)
  T* att_ = nullptr;      // (B, S, C) attention output before Wo
  T* gate_up_ = nullptr;  // (B, S, 2Hf)
  T* act_ = nullptr;      // (B, S, Hf)
  T* rstd_ = nullptr;     // (B, S)
  T* logits_ = nullptr;   // (B, S, V)
  T* last_ = nullptr;     // (B, V) last-position logits of the latest prefill
  const T* last_logits_ = nullptr;  // last_ or logits_ (after a step)
  T* workspace_ = nullptr;  // RFA chunked-form workspace, or softmax prefill scores (S, max_positions)
  T* random_t_ = nullptr;   // (L, H, Dh, D) the fixed random matrices transposed, for the step
  int64_t workspace_size_ = 0;
  std::vector<int32_t> segment_tokens_;  // (B, S) staging for prefill_all with B > 1
};

}  // namespace rfa
