#pragma once
// RFA with the gated delta rule (attention.kind rfa_delta), docs/delta-rule.md. Per (batch
// row b, head h), with RFA's feature map (feature_map.h, gaussian: |phi|² = 1 exactly),
// F features and the state S (F, Dh) (the transpose of the papers' S: row f is what
// feature f recalls):
//   alpha_t = sigmoid(gate_w[h]·n_t + gate_b[h])     the decay (0 at a document's first token)
//   beta_t  = sigmoid(beta_w[h]·n_t + beta_b[h])     the write strength
//   k_t = phi(k_t),  q_t = phi(q_t)
//   S_t = alpha_t (I - beta_t k_t k_tᵀ) S_{t-1} + beta_t k_t v_tᵀ
//       = S' + k_t u_tᵀ   with  S' = alpha_t S_{t-1},  u_t = beta_t (v_t - S'ᵀ k_t)
//   out_t = S_tᵀ q_t      (Dh values; no denominator: the delta rule keeps S bounded)
// The training form runs these rank-1 updates in order, chunk by chunk, saving S only at
// chunk boundaries; the backward recomputes a chunk's states from its boundary and runs
// back through it (docs/delta-rule.md "Training form" says why not the WY/UT form).
// Decoding is the same update, one token at a time (rfa_delta_step).
#include <cstddef>
#include <cstdint>

#include "attention/attention_dims.h"
#include "attention/rfa_attention.h"

namespace rfa {

// One layer's parameters; W is drawn by random_features_draw, not trained.
template <typename T>
struct RfaDeltaParams {
  const T* sigma = nullptr;   // (H, Dh)
  const T* gate_w = nullptr;  // (H, C)  alpha's projection of n
  const T* gate_b = nullptr;  // (H)
  const T* beta_w = nullptr;  // (H, C)  beta's projection of n
  const T* beta_b = nullptr;  // (H)
  const T* W = nullptr;       // (H, D, Dh)
};

// Gradients of the trained parameters; the backward adds (+=) into them.
template <typename T>
struct RfaDeltaParamGrads {
  T* dsigma = nullptr;   // (H, Dh)
  T* dgate_w = nullptr;  // (H, C)
  T* dgate_b = nullptr;  // (H)
  T* dbeta_w = nullptr;  // (H, C)
  T* dbeta_b = nullptr;  // (H)
};

// Elements of what the forward saves for the backward (rfa_delta_layout.h):
//   phi_q, phi_k (B, H, T, F); r_q, r_k (B, H, T); the alpha and beta pre-activations
//   (B, T, H) each; the chunk-entry states (B, H, ceil(T / chunk), F, Dh).
size_t rfa_delta_saved_size(const RfaConfig& c, const AttentionDims& d);
// The workspace forward and backward share, for `threads` threads.
size_t rfa_delta_workspace_size(const RfaConfig& c, const AttentionDims& d, int threads);

// out (B, T, C) overwritten; saved: rfa_delta_saved_size elements, or null when no backward
// follows. state_in: (B, H, F, Dh) the state before token 0 (null = zeros); state_out: the
// state after the last token (null = nowhere); they may alias. in.segment_start: at a flagged
// token alpha = 0 (the state restarts empty). in.pos0 is not read (no position in the rule).
template <typename T>
void rfa_delta_forward(T* out, T* saved, Workspace<T> workspace, const RfaInputs<T>& in, const RfaDeltaParams<T>& p,
                       const RfaConfig& c, const AttentionDims& d, const T* state_in = nullptr,
                       T* state_out = nullptr);

// dout (B, T, C); saved as the forward left it, in and p as the forward had them. Overwrites
// grads.dq, dk, dv, dn; adds into pgrads. The entering state is a constant (no gradient).
template <typename T>
void rfa_delta_backward(const RfaInputGrads<T>& grads, const RfaDeltaParamGrads<T>& pgrads, Workspace<T> workspace,
                        const T* dout, const T* saved, const RfaInputs<T>& in, const RfaDeltaParams<T>& p,
                        const RfaConfig& c, const AttentionDims& d);

// ---- Decoding -------------------------------------------------------------------

// Elements of the step's scratch per (row, head).
size_t rfa_delta_step_scratch_size(const RfaConfig& c, int Dh);
// The step's constants: every head's W packed for feature_map_forward, (H, Dh, pad16(D)).
size_t rfa_delta_constants_size(const RfaConfig& c, int H, int Dh);
template <typename T>
void rfa_delta_constants_fill(T* Wt, const T* W /*(H, D, Dh)*/, const RfaConfig& c, int H, int Dh);

// One token for each listed row: input row i (of rows.n) moves state row rows.state_row(i).
// S: (rows of the state, H, F, Dh); scratch: (rows of the state, H, rfa_delta_step_scratch_size);
// out, in.q/k/v/n: (rows.n, C); p.W is not read (Wt: rfa_delta_constants_fill's). No
// allocation; no thread fork when the work is small (parallel_grain).
template <typename T>
void rfa_delta_step(T* out, T* S, T* scratch, const RfaInputs<T>& in, const RfaDeltaParams<T>& p, const T* Wt,
                    const RfaConfig& c, int H, int Dh, const AttentionRows& rows);

}  // namespace rfa
