#pragma once
// The one interface to attention. Only src/attention/ knows which attention is in
// use: every function here switches on spec.kind once and calls the softmax
// baseline (softmax_flash.h, softmax_kv_cache.h) or the RFA / RFA-Gate cores
// (rfa_attention.h, rfa_recurrent.h). model/ and decode/ call only this file.
// The math: docs/rfa-attention.md.
//
// What a kind brings:
//   parameters      per layer, under "layers.{l}.attn.": RFA sigma (H, Dh); RFA-Gate also
//                   gate_w (H, C) and gate_b (H), with the feature gate (H, F, C) and (H, F)
//                   (names, shapes, init, weight decay)
//   random matrices per layer (H, D, Dh), drawn not trained (RFA kinds; none for softmax)
//   positions       RoPE on q and k when spec.rope, applied here (the core owns its table)
//   training        forward (saving what the backward reads) and backward
//   decoding        a state per layer (RFA: S (B, H, F, Dh+1), fixed size; softmax: a KV
//                   cache that grows, or a ring window), prefill of a segment from the
//                   state, one step of one token, and the state's tensors for save/load
#include <cstdint>
#include <string>
#include <vector>

#include "attention/attention_dims.h"
#include "attention/attention_spec.h"
#include "attention/rfa_recurrent.h"
#include "attention/softmax_kv_cache.h"
#include "layers/rope.h"
#include "tensor/param_table.h"

namespace rfa {

// ---- Parameters -------------------------------------------------------------

// One trained tensor the kind owns in every layer; name relative to "layers.{l}.attn.".
struct AttentionParam {
  std::string name;
  std::vector<int64_t> shape;
  bool decay = false;   // AdamW weight decay
  ParamInit init;
};
std::vector<AttentionParam> attention_params(const AttentionSpec& spec);

// Views of one layer's own parameters (or of their gradients); null where the kind has none.
template <typename T>
struct AttentionWeights {
  T* sigma = nullptr;   // (H, Dh)  RFA kinds
  T* gate_w = nullptr;  // (H, C)   RFA-Gate; feature gate (H, F, C)
  T* gate_b = nullptr;  // (H)      RFA-Gate; feature gate (H, F)
};
// layer_prefix: "layers.{l}.attn."; base: the flat parameter (or gradient) array.
template <typename T>
AttentionWeights<T> attention_weights_view(const ParamTable& table, const std::string& layer_prefix, T* base);

// Random matrices of one layer: (H, D, Dh), or nothing (0 elements) for softmax.
int64_t attention_random_size(const AttentionSpec& spec);
std::vector<int64_t> attention_random_shape(const AttentionSpec& spec);
// out (H, D, Dh): the draw keyed by (seed, step, layer, h); no-op when the kind has none.
template <typename T>
void attention_random_draw(const AttentionSpec& spec, uint64_t seed, uint64_t step, int layer, T* out);

// ---- The core ---------------------------------------------------------------

// A spec and the RoPE table for up to max_positions positions (built when
// spec.rope; allocates, so build it outside the hot loop).
class AttentionCore {
 public:
  AttentionCore() = default;
  AttentionCore(const AttentionSpec& spec, int64_t max_positions);
  const AttentionSpec& spec() const { return spec_; }
  const RopeTable& rope() const { return rope_; }
  // Positions a call may reach (pos0 + T): the rope table's length, or 0 = no limit.
  int64_t position_limit() const { return spec_.rope ? rope_.max_positions : 0; }

 private:
  AttentionSpec spec_;
  RopeTable rope_;
};

// The backward writes dn (the gate reads the normed block input n): the caller
// must add its other contributions to dn after attention_backward, not before.
bool attention_reads_n(const AttentionSpec& spec);
// The decoding state grows with the text (a KV cache; a window bounds it) rather
// than staying one fixed-size recurrent state that can be carried and saved.
bool attention_state_grows(const AttentionSpec& spec);

// Floating-point operations of one layer's forward per token at sequence length T
// (the attention core only, not the projections): for reports.
double attention_forward_flops_per_token(const AttentionSpec& spec, int64_t T);

// Elements of one layer's state carried between training segments (AttentionCall::state_in):
// RFA kinds (B, H, F, Dh+1); 0 for softmax, which has no fixed-size state.
int64_t attention_carry_size(const AttentionSpec& spec, int B);

// Elements of the activations one layer saves between forward and backward.
int64_t attention_saved_size(const AttentionSpec& spec, int B, int T);
// Elements of the scratch forward and backward share (one call at a time), for `threads` threads.
int64_t attention_scratch_size(const AttentionSpec& spec, int B, int T, int threads);

// Inputs of one call, each (B, T, C) in head layout. q and k are rotated in place
// by the forward when spec.rope (the backward then reads the rotated ones, as saved).
template <typename T>
struct AttentionInputs {
  T* q = nullptr;
  T* k = nullptr;
  const T* v = nullptr;
  const T* n = nullptr;  // the normed block input (read when attention_reads_n)
};
template <typename T>
struct AttentionInputGrads {  // each (B, T, C); the backward overwrites them all
  T* dq = nullptr;
  T* dk = nullptr;
  T* dv = nullptr;
  T* dn = nullptr;  // written only when attention_reads_n
};
template <typename T>
struct AttentionCall {
  int B = 0, T_len = 0;
  int64_t pos0 = 0;           // absolute position of row t = 0 (RoPE, the time discount)
  const T* random = nullptr;  // (H, D, Dh) this layer's random matrices
  T* saved = nullptr;         // attention_saved_size elements; null = no backward follows
  Workspace<T> scratch;       // attention_scratch_size elements
  // Stateful training (RFA kinds; null for softmax): the state before row t = 0
  // (null = empty) and where the state after the last row goes (null = nowhere),
  // each attention_carry_size elements; they may alias. The backward treats the
  // entering state as a constant (no gradient crosses the segment boundary).
  const T* state_in = nullptr;
  T* state_out = nullptr;
};

// out: (B, T, C) overwritten.
template <typename T>
void attention_forward(const AttentionCore& core, const AttentionWeights<T>& w, T* out,
                       const AttentionInputs<T>& in, const AttentionCall<T>& call);

// Overwrites the input gradients (dq, dk, dv; dn when attention_reads_n) and adds
// into the parameter gradients dw (zeroed by the caller for a first micro-batch).
// dout, out: (B, T, C); out is the forward's output; in and call as the forward had them.
template <typename T>
void attention_backward(const AttentionCore& core, const AttentionWeights<T>& w,
                        const AttentionWeights<T>& dw, const AttentionInputGrads<T>& g, const T* dout, const T* out,
                        const AttentionInputs<T>& in, const AttentionCall<T>& call);

// ---- Decoding -----------------------------------------------------------------

struct AttentionStateOptions {
  int B = 1;                  // sequences in lockstep
  int64_t max_positions = 0;  // growing state: cache slots (no window); else unused
  int window = 0;             // growing state: a ring of min(window, max_positions) slots; 0 = linear
};

// One layer's decoding state. RFA kinds: `rfa` (S, its step scratch) and the
// layer's fixed random matrices transposed for the step (random_t (H, Dh, D));
// softmax: `kv`. Allocated once, at creation.
template <typename T>
struct AttentionState {
  int B = 0;  // rows
  RfaState<T> rfa;
  std::vector<T> random_t;
  KvCache<T> kv;
};

// random: (H, D, Dh) the layer's fixed evaluation matrices (ignored for softmax).
template <typename T>
AttentionState<T> attention_state_create(const AttentionSpec& s, const T* random, const AttentionStateOptions& o);
template <typename T>
void attention_state_reset(AttentionState<T>& state);  // empty: position 0
// Moves a state back to position p (a KV cache truncated; a ring only while it has not
// wrapped). A recurrent state holds no positions: p is the caller's to track.
template <typename T>
void attention_state_truncate(AttentionState<T>& state, int64_t p);
template <typename T>
int64_t attention_state_bytes(const AttentionState<T>& state);     // in use now
template <typename T>
int64_t attention_state_capacity(const AttentionState<T>& state);  // reserved (bytes)

// Positions the state can take (0 = no limit): a linear cache's length.
template <typename T>
int64_t attention_state_position_limit(const AttentionState<T>& state);

// Scratch of attention_prefill for segments of up to S rows, `threads` threads.
template <typename T>
int64_t attention_prefill_scratch_size(const AttentionCore& core, const AttentionState<T>& state, int B, int S,
                                       int threads);

// Runs a segment (B, T, C) from the state and leaves the state after its last
// row. call.saved is ignored (no backward), call.random the layer's fixed matrices.
template <typename T>
void attention_prefill(const AttentionCore& core, const AttentionWeights<T>& w, AttentionState<T>& state,
                       T* out, const AttentionInputs<T>& in, const AttentionCall<T>& call);

// One token per row: q, k rotated at position pos (when spec.rope), then one
// recurrent step (pos is also the time discount's t). out, in.q/k/v/n: (B, C).
template <typename T>
void attention_step(const AttentionCore& core, const AttentionWeights<T>& w, AttentionState<T>& state, T* out,
                    const AttentionInputs<T>& in, int64_t pos);

// ---- Saving a decoding state ---------------------------------------------------

// "" when the state can be saved and continued; else why not (for the user).
std::string attention_state_save_refusal(const AttentionSpec& spec);
// The one tensor a saveable state consists of: its shape and data.
template <typename T>
std::vector<int64_t> attention_state_shape(const AttentionState<T>& state);
template <typename T>
T* attention_state_data(AttentionState<T>& state);
template <typename T>
const T* attention_state_data(const AttentionState<T>& state);

}  // namespace rfa
