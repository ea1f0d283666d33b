#pragma once
// Internal: where the RFA cores keep their saved activations (offsets in
// elements of T, shared by the forward, backward and the size function so they
// cannot disagree) and the gate helpers. The workspace's layout: rfa_scratch.h.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "attention/attention_dims.h"
#include "attention/feature_map.h"
#include "attention/rfa_attention.h"
#include "kernels/vector_math.h"

namespace rfa {

// Saved activations, per task bh = b*H + h:
//   phi_q, phi_k (B,H,T,F); r_q, r_k, den (B,H,T); gate_a (B,T,H,W), W = 1 (scalar gate) or F (feature
//   gate), the gate product's layout (attention/rfa_gate_products.h); states (B,H,n_chunks,F,Dh+1);
//   state_flags (B,H): 1 when the forward started from a given state (else chunk 0's state is 0);
//   P (B,H,n_chunks,chunk,chunk): each chunk's (Q̂ K̃ᵀ) ⊙ M, lower triangle and 0 above it (saves the backward a product; it reads P by rows and columns).
struct RfaSavedLayout {
  int F = 0, E = 0, n_chunks = 0;  // E = Dh + 1, the augmented value width
  size_t phi_q = 0, phi_k = 0, r_q = 0, r_k = 0, gate_a = 0, den = 0, states = 0, state_flags = 0, P = 0;
  size_t total = 0;
};

inline RfaSavedLayout rfa_saved_layout(const RfaConfig& c, const AttentionDims& d) {
  RfaSavedLayout l;
  l.F = rfa_feature_count(c);
  l.E = d.Dh + 1;
  const size_t Cc = rfa_chunk_len(c, d);
  l.n_chunks = (d.T + int(Cc) - 1) / int(Cc);
  const size_t bh = static_cast<size_t>(d.B) * d.H, bht = bh * d.T;
  size_t at = 0;
  auto take = [&](size_t n) { size_t o = at; at += n; return o; };
  l.phi_q = take(bht * l.F);
  l.phi_k = take(bht * l.F);
  l.r_q = take(bht);
  l.r_k = take(bht);
  l.gate_a = take(bht * rfa_gate_width(c));  // feature gate: (B, T, H, F), the gate product's layout
  l.den = take(bht);
  l.states = take(bh * l.n_chunks * l.F * l.E);
  l.state_flags = take(bh);
  l.P = take(bh * l.n_chunks * Cc * Cc);
  l.total = at;
  return l;
}

// Gate of one token from a_t = gate_w·n_t + gate_b, computed stably:
//   lambda = logsigmoid(a), g = sigmoid(a) = exp(lambda), beta = 1 - g = sigmoid(-a).
template <typename T>
struct GateValues {
  T lambda, g, beta;
};
template <typename T>
inline GateValues<T> gate_values(T a) {
  const T soft = std::log1p(std::exp(-std::abs(a)));  // log(1 + e^-|a|)
  const T lambda = std::min(a, T(0)) - soft;
  const T log_beta = std::min(-a, T(0)) - soft;
  return {lambda, std::exp(lambda), std::exp(log_beta)};
}

// g = sigmoid(a) and beta = sigmoid(-a) of one token, as gate_rows computes them (the same
// exp_of and divisions): the decode step's scalar gate, so a decoded token decays the state by the
// gate training gave it, without gate_values' libm log1p and exps (3% of a 64-row 4x128 step).
template <typename T>
inline void gate_sigmoids(T a, T& g, T& beta) {
  g = T(1) / (T(1) + exp_of(-a));
  beta = T(1) / (T(1) + exp_of(a));
}

// Gates of a chunk's rows from a (n), vectorised: g = sigmoid(a), beta = sigmoid(-a)
// (= 1 - g without cancellation) and eG = exp(G) = prefix products of g, G the
// chunk-local cumulative log-gate (products underflow gracefully to 0, where
// exp of a sum could not overflow either, but needs a log per token).
// a == nullptr: ungated, all ones.
template <typename T>
inline void gate_rows(T* g, T* beta, T* eG, const T* a, int n) {
  if (!a) {
    std::fill(g, g + n, T(1));
    std::fill(beta, beta + n, T(1));
    std::fill(eG, eG + n, T(1));
    return;
  }
  for (int i = 0; i < n; ++i) g[i] = -a[i], beta[i] = a[i];
  exp_row(g, n);
  exp_row(beta, n);
  for (int i = 0; i < n; ++i) g[i] = T(1) / (T(1) + g[i]), beta[i] = T(1) / (T(1) + beta[i]);
  eG[0] = g[0];
  for (int i = 1; i < n; ++i) eG[i] = eG[i - 1] * g[i];
}

// Document boundaries in a chunk (reset (n), nonzero at a document's first row): the decay into
// such a row is 0 (S_s = 0 S_{s-1} + k̃_s v'_sᵀ), so g_s = 0 and eG its prefix products again;
// beta_s keeps the gate's value (the row's own write is the gate's). Every product of gates
// spanning s (M, eG, w) is then 0.
template <typename T>
inline void gate_rows_reset(T* g, T* eG, const uint8_t* reset, int n) {
  for (int i = 0; i < n; ++i)
    if (reset[i]) g[i] = T(0);
  eG[0] = g[0];
  for (int i = 1; i < n; ++i) eG[i] = eG[i - 1] * g[i];
}

// w_j = exp(G_C - G_j) = prod_{r=j+1..n-1} g_r: suffix products of the gates.
template <typename T>
inline void gate_suffix(T* w, const T* g, int n) {
  w[n - 1] = T(1);
  for (int j = n - 2; j >= 0; --j) w[j] = w[j + 1] * g[j + 1];
}

}  // namespace rfa
