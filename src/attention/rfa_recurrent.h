#pragma once
// RFA's recurrent (decoding) form, design section 2: per layer a state
// S (B, H, F, Dh+1) updated once per token, O(F·Dh) time and memory per token
// independent of position.
//   rfa_step:    one token per batch row.
//   rfa_prefill: the chunked form over a prompt, starting from and ending in the state.
#include <vector>

#include "attention/rfa_attention.h"

namespace rfa {

template <typename T>
struct RfaState {
  int B = 0, H = 0, F = 0, Dh = 0;
  std::vector<T> S;        // (B, H, F, Dh+1); last column is the normaliser z
  std::vector<T> scratch;  // (B, H, step_scratch) owned so the step never allocates
};

template <typename T>
RfaState<T> rfa_state_create(const RfaConfig& c, int B, int H, int Dh);  // zero state
template <typename T>
void rfa_state_reset(RfaState<T>& state);  // back to zeros

// out: (B, C); in.q, in.k, in.v, in.n: (B, C), one token per batch row.
template <typename T>
void rfa_step(T* out, RfaState<T>& state, const RfaInputs<T>& in, const RfaParams<T>& p, const RfaConfig& c);

// Runs the prompt (B, T, C) through the chunked form starting from `state`,
// writes out (B, T, C) and leaves the state after the last token in `state`.
// workspace: rfa_workspace_size(c, d, threads).
template <typename T>
void rfa_prefill(T* out, RfaState<T>& state, Workspace<T> workspace, const RfaInputs<T>& in,
                 const RfaParams<T>& p, const RfaConfig& c, const AttentionDims& d);

}  // namespace rfa
