#pragma once
// Internal: where the RFA cores keep things. Offsets in elements of T into the
// saved buffer and the workspace; shared by the forward, backward and the size
// functions so they cannot disagree.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "attention/attention_dims.h"
#include "attention/rfa_attention.h"

namespace rfa {

// Saved activations, per task bh = b*H + h:
//   phi_q, phi_k (B,H,T,F); r_q, r_k, gate_a, den (B,H,T); states (B,H,n_chunks,F,Dh+1).
struct RfaSavedLayout {
  int F = 0, E = 0, n_chunks = 0;  // E = Dh + 1, the augmented value width
  size_t phi_q = 0, phi_k = 0, r_q = 0, r_k = 0, gate_a = 0, den = 0, states = 0, total = 0;
};

inline RfaSavedLayout rfa_saved_layout(const RfaConfig& c, const AttentionDims& d) {
  RfaSavedLayout l;
  l.F = rfa_feature_count(c);
  l.E = d.Dh + 1;
  l.n_chunks = (d.T + c.chunk_size - 1) / c.chunk_size;
  const size_t bh = static_cast<size_t>(d.B) * d.H, bht = bh * d.T;
  size_t at = 0;
  auto take = [&](size_t n) { size_t o = at; at += n; return o; };
  l.phi_q = take(bht * l.F);
  l.phi_k = take(bht * l.F);
  l.r_q = take(bht);
  l.r_k = take(bht);
  l.gate_a = take(bht);
  l.den = take(bht);
  l.states = take(bh * l.n_chunks * l.F * l.E);
  l.total = at;
  return l;
}

// Per-thread scratch of the chunked forward and backward (Cc = chunk size).
inline size_t rfa_forward_scratch_size(const RfaConfig& c, const AttentionDims& d) {
  const size_t F = rfa_feature_count(c), E = d.Dh + 1, Cc = c.chunk_size;
  return d.Dh + c.num_features + 4 * Cc * F + 2 * Cc * E + Cc * Cc + 3 * Cc + F * E + size_t(d.Dh) * c.num_features;
}
inline size_t rfa_backward_scratch_size(const RfaConfig& c, const AttentionDims& d) {
  const size_t F = rfa_feature_count(c), E = d.Dh + 1, Cc = c.chunk_size;
  return 2 * d.Dh + c.num_features + 4 * Cc * F + 4 * Cc * E + 3 * Cc * Cc + 4 * Cc + 3 * F * E;
}
// Backward's shared part, before the per-thread slices: dsigma partials (B,H,Dh) and da (B,H,T).
inline size_t rfa_backward_shared_size(const AttentionDims& d) {
  return static_cast<size_t>(d.B) * d.H * (d.Dh + d.T);
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

}  // namespace rfa
