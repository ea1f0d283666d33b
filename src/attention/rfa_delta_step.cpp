// The rfa_delta decoding step (rfa_delta.h): per listed row and head, the two feature maps of
// one token, the two gates, and one rank-1 update of S (rfa_delta_token.h), the same kernel
// the training form runs, so decoding equals the forward at every position.
#include <algorithm>

#include "attention/feature_map.h"
#include "attention/rfa_delta.h"
#include "attention/rfa_delta_token.h"
#include "attention/rfa_layout.h"
#include "core/parallel.h"
#include "kernels/vector_math.h"

namespace rfa {

// Per (row, head): x̄ (Dh), the feature map's scratch (D + Dh), phi(q), phi(k) (F), e, u (Dh).
size_t rfa_delta_step_scratch_size(const RfaConfig& c, int Dh) {
  return static_cast<size_t>(4 * Dh) + c.num_features + 2 * static_cast<size_t>(rfa_feature_count(c));
}

size_t rfa_delta_constants_size(const RfaConfig& c, int H, int Dh) {
  return static_cast<size_t>(H) * Dh * pad16(c.num_features);
}

template <typename T>
void rfa_delta_constants_fill(T* Wt, const T* W, const RfaConfig& c, int H, int Dh) {
  const int D = c.num_features;
  const size_t per_head = static_cast<size_t>(Dh) * pad16(D);
  for (int h = 0; h < H; ++h) feature_map_pack_forward(Wt + h * per_head, W + static_cast<size_t>(h) * D * Dh, D, Dh);
}

template <typename T>
void rfa_delta_step(T* out, T* S, T* scratch, const RfaInputs<T>& in, const RfaDeltaParams<T>& p, const T* Wt,
                    const RfaConfig& c, int H, int Dh, const AttentionRows& rows) {
  const int C = H * Dh, D = c.num_features, F = rfa_feature_count(c);
  const size_t FD = static_cast<size_t>(F) * Dh, per_task = rfa_delta_step_scratch_size(c, Dh);
  const size_t per_head = static_cast<size_t>(Dh) * pad16(D);
  const T eps_n = T(c.eps_n);
  // Work per (row, head): two feature maps (2 D Dh), two gate dot products (2 C), the update (4 F Dh).
  const int64_t work = 2 * int64_t(D) * Dh + 2 * int64_t(C) + 4 * int64_t(FD);
  parallel_for(int64_t(rows.n) * H, parallel_grain(work), [&](int64_t ih) {
    const int i = static_cast<int>(ih / H), h = static_cast<int>(ih % H);
    const int64_t sh = int64_t(rows.state_row(i)) * H + h;  // this row's state and scratch, head h
    T* at = scratch + sh * per_task;
    auto take = [&](size_t n) { T* r = at; at += n; return r; };
    T* xbar = take(Dh);
    T* fm = take(size_t(D) + Dh);
    T* phiq = take(F);
    T* phik = take(F);
    T* e = take(Dh);
    T* u = take(Dh);
    const size_t row = static_cast<size_t>(i) * C + static_cast<size_t>(h) * Dh;
    const T* sigma = p.sigma + static_cast<size_t>(h) * Dh;
    const T* Wth = Wt + h * per_head;
    l2_normalize_forward(xbar, in.q + row, Dh, eps_n);
    feature_map_forward(phiq, fm, xbar, sigma, Wth, c.feature_map, D, Dh);
    l2_normalize_forward(xbar, in.k + row, Dh, eps_n);
    feature_map_forward(phik, fm, xbar, sigma, Wth, c.feature_map, D, Dh);
    const T* n = in.n + static_cast<size_t>(i) * C;
    const T alpha = gate_values(dot(p.gate_w + static_cast<size_t>(h) * C, n, C) + p.gate_b[h]).g;
    const T beta = gate_values(dot(p.beta_w + static_cast<size_t>(h) * C, n, C) + p.beta_b[h]).g;
    rfa_delta_token_forward(S + sh * FD, e, u, out + row, phik, phiq, in.v + row, alpha, beta, F, Dh);
  });
}

#define RFA_INSTANTIATE(T)                                                                                       \
  template void rfa_delta_constants_fill<T>(T*, const T*, const RfaConfig&, int, int);                          \
  template void rfa_delta_step<T>(T*, T*, T*, const RfaInputs<T>&, const RfaDeltaParams<T>&, const T*,          \
                                  const RfaConfig&, int, int, const AttentionRows&);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
