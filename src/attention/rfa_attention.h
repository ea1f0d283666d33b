#pragma once
// RFA and RFA-Gate attention cores, training (chunked) form: docs/rfa-attention.md
// sections 2-4. Per (batch row b, head h), with
// F = feature_count(kind, D) features and v' = [v, 1]:
//   a_t = gate_w[h]·n_t + gate_b[h],  g_t = sigmoid(a_t),  beta_t = 1 - g_t  (ungated: g = beta = 1)
//   q̂_t = phi(q_t),  k̃_t = delta(t) beta_t phi(k_t)   (delta = 1 unless time_discount: log(t + c))
//   S_t = g_t S_{t-1} + k̃_t v'_tᵀ          S: (F, Dh+1), last column is the normaliser z
// With the feature gate (feature_gate) a_t, g_t, beta_t are vectors over the F features
// (gate_w[h] (F, C), gate_b[h] (F)) and g_t S_{t-1} is diag(g_t) S_{t-1}, beta_t phi(k_t)
// elementwise: the same chunked algorithm with the gate factors of rfa_feature_gate.h.
//   [num_t, den_t] = q̂_tᵀ S_t,   out_t = num_t / max(den_t, eps_d)
// computed chunk by chunk (linear in T). Document boundaries (RfaInputs::segment_start): at a
// document's first token s the decay is 0, S_s = k̃_s v'_sᵀ (beta_s keeps the gate's value), so
// every product of gates that spans s vanishes and the chunked form needs no other change
// (docs/fine-tuning.md "Documents"). The recurrent (decoding) form is rfa_recurrent.h.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "attention/attention_dims.h"
#include "config/config.h"

namespace rfa {

// Built by attention_spec_make (attention/attention_spec.h) from the option tree,
// which validated the values (config/config_keys.cpp); the cores do not check them
// again. The defaults are the option tree's, so a test's RfaConfig{} is a model's.
struct RfaConfig {
  bool gated = true;                                                 // rfa_gate; false: plain RFA (g = beta = 1)
  FeatureMapKind feature_map = AttentionConfig{}.feature_map;
  int num_features = AttentionConfig{}.num_features;                 // D random vectors per head
  int chunk_size = AttentionConfig{}.chunk_size;                     // tokens per chunk of the training form
  double eps_d = AttentionConfig{}.denominator_floor;                // denominator floor
  double eps_n = AttentionConfig{}.qk_norm_eps;                      // l2-normalisation epsilon
  bool feature_gate = false;  // gated: a gate vector over the F features per head and token (rfa_feature_gate.h)
  bool time_discount = false; // k̃_t scaled by delta(t) = log(t + discount_c), t the absolute position
  double discount_c = AttentionConfig{}.time_discount_c;
  int64_t discount_horizon = AttentionConfig{}.time_discount_horizon;  // t capped here; 0 = no cap
  friend bool operator==(const RfaConfig&, const RfaConfig&) = default;
};
// The time discount's weight of the feature written at absolute position t (held at the horizon).
template <typename T>
inline T rfa_discount(const RfaConfig& c, int64_t t) {
  if (c.discount_horizon > 0 && t > c.discount_horizon) t = c.discount_horizon;
  return c.time_discount ? T(std::log(double(t) + c.discount_c)) : T(1);
}
inline int rfa_feature_count(const RfaConfig& c) {
  return c.feature_map == FeatureMapKind::gaussian ? 2 * c.num_features : c.num_features;
}
// Rows per chunk of a call over T tokens: chunk_size, but never more than T (a chunk longer than
// the sequence computes the same single chunk and would only size the saved P and the scratch
// by chunk_size² instead of T²).
inline int rfa_chunk_len(const RfaConfig& c, const AttentionDims& d) {
  return d.T > 0 && d.T < c.chunk_size ? d.T : c.chunk_size;
}
// Gate values per head and token: F with the feature gate, else 1.
inline int rfa_gate_width(const RfaConfig& c) { return c.feature_gate ? rfa_feature_count(c) : 1; }

// Parameters of one layer's core. W is drawn by random_features_draw, not trained.
template <typename T>
struct RfaParams {
  const T* sigma = nullptr;   // (H, Dh)  init 1, no weight decay
  const T* gate_w = nullptr;  // (H, C)   gated only (reads the normed input n); feature gate (H, F, C)
  const T* gate_b = nullptr;  // (H)      gated only; feature gate (H, F)
  const T* W = nullptr;       // (H, D, Dh)
};

// Gradients of the trained parameters; backward adds (+=) into them.
template <typename T>
struct RfaParamGrads {
  T* dsigma = nullptr;   // (H, Dh)
  T* dgate_w = nullptr;  // (H, C)  gated only; feature gate (H, F, C)
  T* dgate_b = nullptr;  // (H)     gated only; feature gate (H, F)
};

// The core's activation inputs, each (B, T, C) in head layout; n (the normed
// layer input the gate reads) is only read when gated and may be null otherwise.
template <typename T>
struct RfaInputs {
  const T* q = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  const T* n = nullptr;
  int64_t pos0 = 0;  // absolute position of row 0 (the time discount's t)
  const int64_t* row_pos0 = nullptr;  // (B) each batch row's own pos0 (decoding rows); null = pos0
  // (B, T) document boundaries (AttentionCall::segment_start), or null: at a flagged row the
  // state restarts empty (the decay into it is 0) and the time discount's t restarts at 0.
  const uint8_t* segment_start = nullptr;
  int64_t pos0_of(int b) const { return row_pos0 ? row_pos0[b] : pos0; }
};

// Gradients of the inputs, each (B, T, C): backward overwrites them all (no zeroing
// needed; the layer adds the projections' parts to dn afterwards). dn only when gated.
template <typename T>
struct RfaInputGrads {
  T* dq = nullptr;
  T* dk = nullptr;
  T* dv = nullptr;
  T* dn = nullptr;
};

// Saved activations (elements of T), written by the forward, read by the backward:
//   phi_q, phi_k (B,H,T,F); r_q, r_k, gate_a, den (B,H,T) (feature gate: gate_a (B,T,H,F)); chunk-entry states (B,H,ceil(T/chunk),F,Dh+1);
//   a flag per (b, h); each chunk's masked score matrix (B,H,ceil(T/chunk),chunk,chunk).
size_t rfa_saved_size(const RfaConfig& c, const AttentionDims& d);
// Workspace for forward and backward (the larger of the two), for `threads` threads
// (pass thread_count(); more is fine).
size_t rfa_workspace_size(const RfaConfig& c, const AttentionDims& d, int threads);

// out: (B, T, C) overwritten. saved: rfa_saved_size elements, or null when no
// backward follows (evaluation, prefill). state_in: (B, H, F, Dh+1) the state
// before token 0, null = zeros. state_out: (B, H, F, Dh+1) the state after the
// last token, or null; it may alias state_in (carrying state across segments).
template <typename T>
void rfa_forward(T* out, T* saved, Workspace<T> workspace, const RfaInputs<T>& in, const RfaParams<T>& p,
                 const RfaConfig& c, const AttentionDims& d, const T* state_in = nullptr,
                 T* state_out = nullptr);

// dout: (B, T, C); out: the forward's output (B, T, C), unchanged; saved as the
// forward left it. Adds into input and parameter gradients. The entering state
// (state_in of the forward) is treated as a constant: no gradient flows into it
// (truncated backpropagation across segments).
template <typename T>
void rfa_backward(const RfaInputGrads<T>& grads, const RfaParamGrads<T>& pgrads, Workspace<T> workspace,
                  const T* dout, const T* out, const T* saved, const RfaInputs<T>& in, const RfaParams<T>& p,
                  const RfaConfig& c, const AttentionDims& d);

}  // namespace rfa
