#pragma once
// Autoregressive decoding over the whole model. A prompt is prefilled segment by
// segment through the training block (model/block.h) with the attention
// continuing from each layer's state (no activations saved); then every new
// token is one step per layer:
//   RFA kinds: state S (B, H, F, Dh+1) per layer, O(F·Dh) work and memory per
//              head and token whatever the position; no length limit.
//   softmax:   a KV cache per layer (B, H, max_positions, Dh), O(t) per token;
//              with a window W, a ring cache (B, H, W, Dh) of the last W
//              positions, O(W) per token (softmax_kv_cache.h).
// The attention (attention/attention_core.h) owns the states, its random
// matrices (the model's FIXED evaluation set, copied at construction: build the
// decoder after loading the weights) and its RoPE table. Other weights are read
// live from the model, except that a bf16 decoder packs the bf16 weight copies
// for its step at construction too. Everything is allocated by the constructor; prefill()
// and step() never allocate.
#include <cstdint>
#include <vector>

#include "attention/attention_core.h"
#include "model/activations.h"
#include "model/model.h"
#include "tensor/arena.h"

namespace rfa {

struct DecoderOptions {
  int batch = 1;               // B sequences decoded in lockstep
  int max_segment = 256;       // most tokens per prefill() call (longer prompts go in pieces)
  int64_t max_positions = 0;   // positions to decode (prompt + generated): the RoPE table and softmax's
                               // KV cache without a window; 0 for an RFA kind without RoPE (no limit)
  int window = 0;              // softmax: attend over the last `window` positions (a ring KV cache of
                               // min(window, max_positions) slots); 0 = the whole text. RFA kinds: unused
  Precision precision = Precision::fp32;  // bf16: the matrix products read the model's bf16 weight copies
                                          // (the model must be built with them); the rest stays float
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

  // Each layer's attention state (L), for saving/restoring a generation.
  std::vector<AttentionState<T>>& attention_states() { return states_; }
  const std::vector<AttentionState<T>>& attention_states() const { return states_; }
  void set_position(int64_t p);  // after restoring states (RFA) / truncating caches (softmax)

 private:
  const T* run(const int32_t* tokens, int S, bool recurrent);
  void prefill_layers(const int32_t* tokens, int S);  // (B, S)
  void step_layers(const int32_t* tokens);            // (B)
  void pack_step_weights();                           // bf16: fills step_bf16_

  Model<T>& model_;
  ModelSpec spec_;
  int B_ = 0, S_max_ = 0;
  int64_t position_ = 0;
  int64_t position_limit_ = 0;      // the most positions the states and RoPE table allow; 0 = none
  std::vector<AttentionState<T>> states_;  // (L)
  AttentionCore attention_;         // RoPE table for max_positions
  Arena<T> arena_;
  BlockActs<T> acts_;     // one segment's block buffers (B, S, ...), shared by every layer
  BlockActsBf16 acts_bf16_;  // bf16 only: the products' inputs (B, S, C) / (B, S, Hf); null in fp32
  // bf16 only: the step's weight matrices packed for B-row products (gemm_bf16_packed),
  // taken from the model's bf16 copies at construction.
  struct StepWeightsBf16 {
    const void *wq = nullptr, *wk = nullptr, *wv = nullptr, *wo = nullptr, *w13 = nullptr, *w2 = nullptr;
  };
  std::vector<StepWeightsBf16> step_bf16_;  // (L)
  const void* step_lm_head_bf16_ = nullptr;
  Arena<uint8_t> step_packed_;
  T* logits_ = nullptr;   // (B, S, V)
  T* last_ = nullptr;     // (B, V) last-position logits of the latest prefill
  const T* last_logits_ = nullptr;  // last_ or logits_ (after a step)
  Workspace<T> scratch_;  // the attention's prefill scratch (RFA chunked form or softmax scores)
  std::vector<int32_t> segment_tokens_;  // (B, S) staging for prefill_all with B > 1
};

}  // namespace rfa
