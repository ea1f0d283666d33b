#pragma once
// The one interface to attention. Only src/attention/ knows which attention is in
// use: every function here looks the layer's kind up in the table of kinds
// (attention_kind.h; one table per kind, registered in attention_kinds.cpp) and
// calls it. model/ and decode/ call only this file; they see named parameters and
// an opaque decoding state, never a kind's fields. The math: docs/rfa-attention.md;
// what a new kind must provide: docs/attention-kinds.md.
//
// What a kind brings:
//   parameters      per layer, under "layers.{l}.attn.": named tensors with shapes, init, decay
//                   (RFA: sigma (H, Dh); RFA-Gate also gate_w, gate_b; softmax: none)
//   random matrices per layer, drawn not trained (RFA kinds (H, D, Dh); none for softmax)
//   positions       RoPE on q and k when spec.rope, applied here for every kind
//   short conv      spec.short_conv: a causal depthwise convolution of q, k, v before RoPE, here for
//                   every kind: its weights after the kind's own, its history in the carried
//                   state and the decoding state, its inputs in the saved activations (short_conv.h)
//   output gate     spec.output_gate: each head's output RMS-normed and gated by SiLU(n W_g) after the
//                   kind, here for every kind: its weights after the convolution's, o and z in the saved
//                   activations, its backward's buffers before the kind's scratch (output_gate.h)
//   training        forward (saving what the backward reads) and backward; the state carried
//                   between training segments (stateful training), as a per-row shape
//   decoding        a state of named per-row tensors (RFA: S; softmax: a KV cache, whole or a
//                   ring window), prefill of a segment, one step of one token per row, any rows
//   memory          the saved activations, the scratch, and what decoding reserves (attention_memory.h)
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attention/attention_dims.h"
#include "attention/attention_spec.h"
#include "layers/rope.h"
#include "tensor/arena.h"
#include "tensor/param_table.h"

namespace rfa {

struct AttentionKindDef;  // attention_kind.h (src/attention/ only)

// ---- Parameters -------------------------------------------------------------

// One trained tensor the kind owns in every layer; name relative to "layers.{l}.attn.".
struct AttentionParam {
  std::string name;
  std::vector<int64_t> shape;
  bool decay = false;   // AdamW weight decay
  ParamInit init;
};
std::vector<AttentionParam> attention_params(const AttentionSpec& spec);

// The most tensors a kind may own per layer (AttentionWeights' capacity).
inline constexpr int kAttentionMaxParams = 10;

// Views of one layer's own parameters (or of their gradients), in attention_params order:
// the kind reads them by its own names; a caller only passes them on.
template <typename T>
struct AttentionWeights {
  std::array<T*, kAttentionMaxParams> tensors{};  // null past the kind's count
  T* operator[](int i) const { return tensors[static_cast<size_t>(i)]; }
};
// layer_prefix: "layers.{l}.attn."; base: the flat parameter (or gradient) array. Throws Error
// naming a tensor of attention_params(spec) the table lacks.
template <typename T>
AttentionWeights<T> attention_weights_view(const AttentionSpec& spec, const ParamTable& table,
                                           const std::string& layer_prefix, T* base);

// Random matrices of one layer (RFA kinds: (H, D, Dh)), or nothing (0 elements).
int64_t attention_random_size(const AttentionSpec& spec);
std::vector<int64_t> attention_random_shape(const AttentionSpec& spec);
// out (attention_random_size): the draw keyed by (seed, step, layer, h); no-op when the kind has none.
template <typename T>
void attention_random_draw(const AttentionSpec& spec, uint64_t seed, uint64_t step, int layer, T* out);

// ---- The core ---------------------------------------------------------------

// A spec and the RoPE table for up to max_positions positions (built when
// spec.rope; allocates, so build it outside the hot loop). Cores of layers with the
// same head size and theta may share one table (attention_cores_make).
class AttentionCore {
 public:
  AttentionCore() = default;
  AttentionCore(const AttentionSpec& spec, int64_t max_positions);
  AttentionCore(const AttentionSpec& spec, std::shared_ptr<const RopeTable> rope);
  const AttentionSpec& spec() const { return spec_; }
  const RopeTable& rope() const { return *rope_; }
  const std::shared_ptr<const RopeTable>& rope_table() const { return rope_; }
  // Positions a call may reach (pos0 + T): the rope table's length, or 0 = no limit.
  int64_t position_limit() const { return spec_.rope ? rope_->max_positions : 0; }
  const AttentionKindDef& kind() const { return *kind_; }
  // The index of conv_q in the layer's AttentionWeights (conv_k, conv_v follow): the kind's own
  // tensors come first. Meaningful when spec.short_conv > 0.
  int conv_param() const { return conv_param_; }
  // The index of out_norm (out_gate follows), after the convolution's. Meaningful when spec.output_gate.
  int gate_param() const { return conv_param_ + (spec_.short_conv > 0 ? 3 : 0); }

 private:
  AttentionSpec spec_;
  const AttentionKindDef* kind_ = nullptr;
  int conv_param_ = 0;
  std::shared_ptr<const RopeTable> rope_;
};

// One core per layer spec, layers with RoPE of the same head size and theta sharing one
// table of max_positions positions.
std::vector<AttentionCore> attention_cores_make(const std::vector<AttentionSpec>& specs, int64_t max_positions);

// The backward writes dn (RFA-Gate's gate or the output gate reads the normed block input n):
// the caller must add its other contributions to dn after attention_backward, not before.
bool attention_reads_n(const AttentionSpec& spec);
// The decoding state grows with the text (a KV cache; a window bounds it) rather
// than staying one fixed-size recurrent state that can be carried and saved.
bool attention_state_grows(const AttentionSpec& spec);

// Floating-point operations of one layer's forward per token at sequence length T
// (the attention core only, not the projections): for reports.
double attention_forward_flops_per_token(const AttentionSpec& spec, int64_t T);
// The same for the backward: what it executes (for an RFA kind less than twice the forward,
// its feature maps' drawn projections having no weight gradient).
double attention_backward_flops_per_token(const AttentionSpec& spec, int64_t T);

// The state one layer carries between training segments (AttentionCall::state_in), one
// row's shape (RFA kinds (H, F, Dh+1)); empty when the kind carries none (softmax). With
// spec.short_conv a kind that carries a state also carries the convolution's history: the
// shape is then flat, one row's count, and the layout (B, kind's shape) followed by (B, 3, K-1, C).
std::vector<int64_t> attention_carry_shape(const AttentionSpec& spec);
// Elements of that state for B rows: (B, carry shape...); 0 when the kind carries none.
int64_t attention_carry_size(const AttentionSpec& spec, int B);

// Elements of the activations one layer saves between forward and backward.
int64_t attention_saved_size(const AttentionSpec& spec, int B, int T);
// Elements of the scratch forward and backward share (one call at a time), for `threads` threads.
int64_t attention_scratch_size(const AttentionSpec& spec, int B, int T, int threads);
// The kind's keys that shrink those, with values ("attention.chunk_size (64), attention.num_features
// (32)"), for memory messages; "" when the kind has none of its own.
std::string attention_activation_keys(const AttentionSpec& spec);
// The same for the random matrices and a decoding state that does not grow ("attention.num_features (32)").
std::string attention_state_keys(const AttentionSpec& spec);

// Inputs of one call, each (B, T, C) in head layout. With spec.short_conv, q, k and v are
// convolved in place first (short_conv.h); then q and k are rotated in place when spec.rope
// (the backward then reads the convolved and rotated ones, as the forward left them).
template <typename T>
struct AttentionInputs {
  T* q = nullptr;
  T* k = nullptr;
  T* v = nullptr;
  const T* n = nullptr;  // the normed block input (read when attention_reads_n)
  const T* gate_packed = nullptr;  // the decode step: the output gate's W_g packed (kernels/step_gemm.h)
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
  int64_t pos0 = 0;             // absolute position of row t = 0 (RoPE, the time discount)
  const int64_t* row_pos0 = nullptr;  // (B) decoding: each row's own pos0 (rows at different
                                      // positions); null = pos0 for every row
  const T* random = nullptr;    // this layer's random matrices (attention_random_size)
  T* saved = nullptr;           // attention_saved_size elements; null = no backward follows
  Workspace<T> scratch;         // attention_scratch_size elements
  // Stateful training (kinds with a carry shape; null otherwise): the state before row
  // t = 0 (null = empty) and where the state after the last row goes (null = nowhere),
  // each attention_carry_size elements; they may alias. The backward treats the
  // entering state as a constant (no gradient crosses the segment boundary).
  const T* state_in = nullptr;
  T* state_out = nullptr;
  // Document boundaries (data.document_boundaries reset; training calls only): (B, T), nonzero at
  // a document's first token, where a recurrent state restarts empty (state_in, or what came
  // before in the row, is forgotten), softmax masks the keys before it, and RoPE positions and
  // the time discount's t restart at 0 (core/segment_starts.h). Null: none (today's path).
  const uint8_t* segment_start = nullptr;
  int64_t pos0_of(int b) const { return row_pos0 ? row_pos0[b] : pos0; }
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
  int B = 1;                  // rows (sequences), each at its own position
  int64_t max_positions = 0;  // growing state: cache slots (no window); else unused
  int window = 0;             // growing state: a ring of min(window, max_positions) slots; 0 = linear
};

// One tensor of a decoding state, per row: the state holds it as (B, shape...), row-major,
// so one row's slice is contiguous. Saved files name it "layers.{l}.<name>".
struct AttentionStateTensor {
  std::string name;
  std::vector<int64_t> shape;  // one row's
  // The axis positions fill, one slot per position (a KV cache's), or -1: the tensor is in
  // use whole at any position (a recurrent state). At position p a row uses min(p, shape[axis])
  // slots of it: what row_save_in_use copies.
  int position_axis = -1;
  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

template <typename T>
struct AttentionStateView;  // attention_kind.h: what a kind's prefill and step read

// One layer's decoding state for B rows, allocated once, at creation: the kind's per-row
// tensors (each (B, ...)), its constants (RFA: the layer's fixed random matrices
// transposed for the step) and the step's scratch. Opaque: callers move rows (reset,
// save, restore) and hand the state to prefill and step; only the kind reads its tensors.
// Positions are the caller's (the decoder's), passed to every call.
template <typename T>
class AttentionState {
 public:
  AttentionState() = default;
  // random: the layer's fixed evaluation matrices (ignored when the kind draws none).
  AttentionState(const AttentionSpec& spec, const T* random, const AttentionStateOptions& options);

  int rows() const { return options_.B; }
  const AttentionSpec& spec() const { return spec_; }
  const AttentionStateOptions& options() const { return options_; }
  const std::vector<AttentionStateTensor>& tensors() const { return tensors_; }
  // Row b of tensor i (tensors()[i].size() elements).
  T* tensor_row(int i, int b);
  const T* tensor_row(int i, int b) const;
  // Elements of one row over all tensors: what row_save writes and row_restore reads.
  int64_t row_size() const { return row_size_; }
  void row_save(int b, T* out) const;  // no allocation
  void row_restore(int b, const T* in);
  void row_reset(int b);  // row b empty: as at position 0; the other rows untouched
  // The same for the part of a row in use at position pos (a KV cache's filled slots, a
  // recurrent state whole): what a state cache keeps. row_restore_in_use leaves the other
  // slots as they were (unread below the position).
  int64_t row_size_in_use(int64_t pos) const;
  void row_save_in_use(int b, int64_t pos, T* out) const;  // no allocation
  void row_restore_in_use(int b, int64_t pos, const T* in);
  int64_t scratch_size() const {  // the step's, elements: the kind's and the output gate's
    return static_cast<int64_t>(scratch_.size() + gate_scratch_.size());
  }

  // Internal to src/attention/: rows [b0, b0 + n) as the kind reads them.
  AttentionStateView<T> view(int b0, int n);
  // The tensor holding the short convolution's history, (3, K-1, C) per row, after the kind's
  // own; -1 without one (short_conv 0 or 1).
  int conv_tensor() const { return conv_tensor_; }
  // The step's z of the output gate, (B, C); null without one.
  T* gate_scratch() { return gate_scratch_.empty() ? nullptr : gate_scratch_.data(); }

 private:
  AttentionSpec spec_;
  const AttentionKindDef* kind_ = nullptr;
  AttentionStateOptions options_;
  std::vector<AttentionStateTensor> tensors_;
  std::vector<int64_t> offsets_;  // tensor i starts at data_ + offsets_[i], (B, size_i)
  int64_t row_size_ = 0;
  Arena<T> data_;  // on huge pages from 2 MiB (tensor/arena.h): a step streams every row's state
  std::vector<T> constants_;
  std::vector<T> scratch_;        // (B, scratch per row)
  int64_t scratch_per_row_ = 0;
  int conv_tensor_ = -1;
  std::vector<T> gate_scratch_;   // (B, C) with spec.output_gate
};

// Bytes of the state in use with its rows at positions pos (B): a recurrent state's
// whole size; a KV cache the slots its rows have filled.
template <typename T>
int64_t attention_state_bytes(const AttentionState<T>& state, const int64_t* pos);
template <typename T>
int64_t attention_state_capacity(const AttentionState<T>& state);  // reserved (bytes) by the per-row tensors

// Positions a row can take (0 = no limit): a linear cache's length.
int64_t attention_state_position_limit(const AttentionSpec& spec, const AttentionStateOptions& options);
// "" when a row at position `from` can be moved to `to` (a state restored, a cache
// truncated: a linear cache to any position it holds, a ring only while it has not
// wrapped; a recurrent state holds no positions: any); else why not, for the user.
std::string attention_state_move_refusal(const AttentionSpec& spec, const AttentionStateOptions& options,
                                         int64_t from, int64_t to);

// Scratch of attention_prefill for segments of up to S rows over B rows, `threads` threads.
int64_t attention_prefill_scratch_size(const AttentionSpec& spec, const AttentionStateOptions& options, int B, int S,
                                       int threads);

// Runs a segment (B, T, C) for rows [b0, b0 + call.B) of the state, each continuing
// from its own position (call.pos0_of(b)), and leaves the rows' state after their last
// token; the other rows are untouched. call.saved is ignored (no backward), call.random
// the layer's fixed matrices.
template <typename T>
void attention_prefill(const AttentionCore& core, const AttentionWeights<T>& w, AttentionState<T>& state, int b0,
                       T* out, const AttentionInputs<T>& in, const AttentionCall<T>& call);

// One token per listed row (AttentionRows, attention_dims.h): q, k rotated at the row's position (when spec.rope), then
// one recurrent step (the position is also the time discount's t). out, in.q/k/v/n: (n, C).
template <typename T>
void attention_step(const AttentionCore& core, const AttentionWeights<T>& w, AttentionState<T>& state, T* out,
                    const AttentionInputs<T>& in, const AttentionRows& rows);
// Rows [r0, r1) of that step (out and in still for all rows.n), on the calling thread: each row's
// state, scratch and tensors are its own, so the threads of one parallel region may step disjoint
// parts of the same rows side by side (the decoder's row split runs a whole step so, without a
// barrier between the layers).
template <typename T>
void attention_step_part(const AttentionCore& core, const AttentionWeights<T>& w, AttentionState<T>& state, T* out,
                         const AttentionInputs<T>& in, const AttentionRows& rows, int r0, int r1);

// ---- Saving a decoding state ---------------------------------------------------

// "" when the state can be saved to a file and continued; else why not (for the user).
std::string attention_state_save_refusal(const AttentionSpec& spec);
// What a saved state's sums depend on besides the weights (positions, time discount),
// recorded with it and compared on load: "no positions, no time discount".
std::string attention_state_form(const AttentionSpec& spec);

}  // namespace rfa
