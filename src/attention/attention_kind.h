#pragma once
// Internal to src/attention/: what one attention kind supplies, as one table. Each kind
// defines its table in its own files (softmax_kind.cpp, rfa_kind.cpp) as
//   extern const AttentionKindDef kAttentionKind_<name>;
// and is registered by one line in RFA_ATTENTION_KINDS (config/config.h); attention_core.h
// dispatches every call through attention_kind_def(spec.kind). The checklist of what a
// new kind provides, and what each entry must guarantee: docs/attention-kinds.md.
#include <cstdint>
#include <string>
#include <vector>

#include "attention/attention_core.h"
#include "attention/attention_memory.h"

namespace rfa {

inline constexpr int kAttentionMaxStateTensors = 8;

// Rows [b0, b0 + B) of an AttentionState, as a kind's prefill and step read them.
template <typename T>
struct AttentionStateView {
  int B = 0;                                             // rows in the view
  std::array<T*, kAttentionMaxStateTensors> tensors{};   // row 0 of tensor i; row b at + b * sizes[i]
  std::array<int64_t, kAttentionMaxStateTensors> sizes{};
  const T* constants = nullptr;                          // the kind's per-layer constants
  T* scratch = nullptr;                                  // (B, scratch_per_row) step scratch
  int64_t scratch_per_row = 0;
  AttentionStateOptions options;                         // as the state was created (B: all its rows)
  T* row(int i, int b) const { return tensors[static_cast<size_t>(i)] + b * sizes[static_cast<size_t>(i)]; }
};

// What the state of one kind holds: per-row tensors, constants and step scratch (elements).
struct AttentionStateLayout {
  std::vector<AttentionStateTensor> tensors;  // per row; saved, restored and moved with a row
  int64_t constants = 0;                      // per layer, fixed after creation
  int64_t scratch_per_row = 0;                // the step's
};

// The functions of one element type (float: training and decoding; double: gradient checks).
template <typename T>
struct AttentionKernels {
  // out (attention_random_size): the layer's draw keyed by (seed, step, layer, head).
  void (*random_draw)(const AttentionSpec&, uint64_t seed, uint64_t step, int layer, T* out);
  // Training (RoPE already applied to in.q, in.k by the dispatcher, whatever the kind).
  void (*forward)(const AttentionCore&, const AttentionWeights<T>&, T* out, const AttentionInputs<T>&,
                  const AttentionCall<T>&);
  void (*backward)(const AttentionCore&, const AttentionWeights<T>& w, const AttentionWeights<T>& dw,
                   const AttentionInputGrads<T>&, const T* dout, const T* out, const AttentionInputs<T>&,
                   const AttentionCall<T>&);
  // Decoding. state_init fills the constants (random: the layer's fixed matrices); prefill
  // runs call.B rows from their positions (call.pos0_of); step moves the listed rows.
  void (*state_init)(const AttentionSpec&, const AttentionStateView<T>&, T* constants, const T* random);
  void (*prefill)(const AttentionCore&, const AttentionWeights<T>&, const AttentionStateView<T>&, T* out,
                  const AttentionInputs<T>&, const AttentionCall<T>&);
  void (*step)(const AttentionCore&, const AttentionWeights<T>&, const AttentionStateView<T>&, T* out,
               const AttentionInputs<T>&, const AttentionRows&);
  void (*row_reset)(const AttentionStateView<T>&, int b);  // row b as at position 0
};

struct AttentionKindDef {
  AttentionKind kind;
  // Parameters (names, shapes, init, decay) and random matrices of one layer.
  std::vector<AttentionParam> (*params)(const AttentionSpec&);
  int64_t (*random_size)(const AttentionSpec&);
  std::vector<int64_t> (*random_shape)(const AttentionSpec&);
  bool (*reads_n)(const AttentionSpec&);
  bool (*state_grows)(const AttentionSpec&);  // the decoding state grows with the text (a full KV cache)
  // Training sizes (elements) and cost.
  double (*forward_flops_per_token)(const AttentionSpec&, int64_t T);
  double (*backward_flops_per_token)(const AttentionSpec&, int64_t T);  // what the backward executes
  int64_t (*saved_size)(const AttentionSpec&, int B, int T);
  int64_t (*scratch_size)(const AttentionSpec&, int B, int T, int threads);
  SmallShape (*carry_shape)(const AttentionSpec&);  // one row; rank 0 = carries none
  // Decoding: the state's layout and what it reserves, estimated before anything is allocated.
  AttentionStateLayout (*state_layout)(const AttentionSpec&, const AttentionStateOptions&);
  AttentionDecodeMemory (*decode_memory)(const AttentionSpec&, const AttentionStateOptions&, int S, int threads);
  int64_t (*prefill_scratch_size)(const AttentionSpec&, const AttentionStateOptions&, int B, int S, int threads);
  int64_t (*position_limit)(const AttentionSpec&, const AttentionStateOptions&);
  std::string (*move_refusal)(const AttentionSpec&, const AttentionStateOptions&, int64_t from, int64_t to);
  const char* (*save_refusal)(const AttentionSpec&);  // "" = a state can be saved to a file and continued
  std::string (*state_form)(const AttentionSpec&);
  // The keys (with values) that shrink what the kind adds to a memory estimate, for its
  // messages: the training activations', and the decoding state's and random matrices'
  // when they do not grow; "" when only the generic keys matter.
  std::string (*activation_keys)(const AttentionSpec&);
  std::string (*state_keys)(const AttentionSpec&);
  AttentionKernels<float> f32;
  AttentionKernels<double> f64;

  template <typename T>
  const AttentionKernels<T>& kernels() const;
};

template <>
inline const AttentionKernels<float>& AttentionKindDef::kernels<float>() const {
  return f32;
}
template <>
inline const AttentionKernels<double>& AttentionKindDef::kernels<double>() const {
  return f64;
}

// The registered table of a kind (attention_kinds.cpp).
const AttentionKindDef& attention_kind_def(AttentionKind kind);

// The RoPE part every kind shares: "rope theta 10000" or "no positions" (attention_kinds.cpp).
std::string attention_positions_form(const AttentionSpec& spec);

}  // namespace rfa
