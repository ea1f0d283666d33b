#pragma once
// RFA's recurrent (decoding) form, docs/rfa-attention.md section 2: per layer a state
// S (B, H, F, Dh+1) updated once per token, O(F·Dh) time and memory per token
// independent of position.
//   rfa_step_reference: one token per batch row, plainly (the tests' twin).
//   rfa_decode_step:    the same, fused for speed (rfa_decode_step.cpp).
//   rfa_prefill:        the chunked form over a prompt, starting from and ending in the state.
#include <vector>

#include "attention/rfa_attention.h"

namespace rfa {

// The state of B rows in memory the caller owns (a decoding state's tensors).
template <typename T>
struct RfaStateView {
  int B = 0, H = 0, F = 0, Dh = 0;
  T* S = nullptr;        // (B, H, F, Dh+1); last column is the normaliser z
  T* scratch = nullptr;  // (B, H, rfa_step_scratch_size) the step's, so it never allocates
};

// Elements of the step's scratch per (row, head).
size_t rfa_step_scratch_size(const RfaConfig& c, int Dh);

// An owning state (the tests' and the references').
template <typename T>
struct RfaState {
  int B = 0, H = 0, F = 0, Dh = 0;
  std::vector<T> S;        // (B, H, F, Dh+1)
  std::vector<T> scratch;  // (B, H, rfa_step_scratch_size)
  RfaStateView<T> view() { return {B, H, F, Dh, S.data(), scratch.data()}; }
};

template <typename T>
RfaState<T> rfa_state_create(const RfaConfig& c, int B, int H, int Dh);  // zero state
template <typename T>
void rfa_state_reset(RfaState<T>& state);  // back to zeros

// out: (B, C); in.q, in.k, in.v, in.n: (B, C), one token per batch row, every row at in.pos0.
template <typename T>
void rfa_step_reference(T* out, RfaState<T>& state, const RfaInputs<T>& in, const RfaParams<T>& p,
                        const RfaConfig& c);

// rfa_step_reference fused for speed, one pass over S, for the listed rows (input row i is
// state row rows.state_row(i), at position rows.pos[i]: the time discount's t):
//   S = g S + beta phi(k) [v, 1]ᵀ,  [num, den] = phi(q)ᵀ S,  out = num / max(den, eps_d)
// out, in.q/k/v/n: (rows.n, C). Wt: p.W transposed per head, (H, Dh, D), so u = W (sigma ⊙ x̄)
// is Dh vector updates instead of D dot products. Work per (row, head) runs on the calling
// thread when small (parallel_grain): at B = 1 a thread fork costs more than the step.
template <typename T>
void rfa_decode_step(T* out, const RfaStateView<T>& state, const RfaInputs<T>& in, const RfaParams<T>& p,
                     const T* Wt, const RfaConfig& c, const AttentionRows& rows);

// Wt (H, Dh, D) from W (H, D, Dh).
template <typename T>
void rfa_random_transpose(T* Wt, const T* W, int H, int D, int Dh);

// Runs the prompt (B, T, C) through the chunked form starting from `state`,
// writes out (B, T, C) and leaves the state after the last token in `state`.
// Row b starts at in.pos0_of(b). workspace: rfa_workspace_size(c, d, threads).
template <typename T>
void rfa_prefill(T* out, const RfaStateView<T>& state, Workspace<T> workspace, const RfaInputs<T>& in,
                 const RfaParams<T>& p, const RfaConfig& c, const AttentionDims& d);

}  // namespace rfa
