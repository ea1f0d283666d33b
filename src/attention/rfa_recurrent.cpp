// RFA recurrent form (docs/rfa-attention.md section 2), one token per batch row:
//   S = g S + beta phi(k) [v, 1]ᵀ,   [num, den] = phi(q)ᵀ S,   out = num / max(den, eps_d)
#include "attention/rfa_recurrent.h"

#include <algorithm>

#include "attention/attention_tasks.h"
#include "attention/feature_map.h"
#include "attention/rfa_layout.h"
#include "kernels/vector_math.h"
#include "core/error.h"
#include "core/parallel.h"

namespace rfa {

// Per-(b, h) step scratch, 2 Dh + 2 D + 4 F + 2 E: the reference step's x̄ (Dh), u and sigma ⊙ x̄
// (D + Dh), or the fused step's sigma ⊙ x̄ and u for q and k side by side (2 Dh, 2 D); then phi_q,
// phi_k (F), v' (E), y (E), and the feature gate's g and beta (F each).
size_t rfa_step_scratch_size(const RfaConfig& c, int Dh) {
  return static_cast<size_t>(2 * Dh) + 2 * c.num_features + 4 * rfa_feature_count(c) + 2 * (Dh + 1);
}

template <typename T>
RfaState<T> rfa_state_create(const RfaConfig& c, int B, int H, int Dh) {
  if (B <= 0 || H <= 0 || Dh <= 0) fail("rfa state: B={} H={} Dh={} must all be positive", B, H, Dh);
  RfaState<T> s;
  s.B = B, s.H = H, s.F = rfa_feature_count(c), s.Dh = Dh;
  s.S.assign(static_cast<size_t>(B) * H * s.F * (Dh + 1), T(0));
  s.scratch.assign(static_cast<size_t>(B) * H * rfa_step_scratch_size(c, Dh), T(0));
  return s;
}

template <typename T>
void rfa_state_reset(RfaState<T>& state) {
  std::fill(state.S.begin(), state.S.end(), T(0));
}

template <typename T>
void rfa_step_reference(T* out, RfaState<T>& st, const RfaInputs<T>& in, const RfaParams<T>& p, const RfaConfig& c) {
  const int H = st.H, Dh = st.Dh, C = H * Dh, D = c.num_features, F = st.F, E = Dh + 1;
  RFA_ASSERT(F == rfa_feature_count(c), "state made for {} features, config has {}", F, rfa_feature_count(c));
  RFA_ASSERT(!c.gated || (in.n && p.gate_w && p.gate_b), "gated RFA needs n, gate_w and gate_b");
  const T eps_n = T(c.eps_n), eps_d = T(c.eps_d);
  const size_t per_task = rfa_step_scratch_size(c, Dh), FE = static_cast<size_t>(F) * E;
  // Work per (b, h): two feature maps (2 D Dh) and the state update and read (2 F E).
  const int64_t work = 2 * int64_t(D) * Dh + 2 * int64_t(FE);
  parallel_for(int64_t(st.B) * H, parallel_grain(work), [&](int64_t bh) {
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H);
    T* at = st.scratch.data() + bh * per_task;
    auto take = [&](size_t n) { T* r = at; at += n; return r; };
    T* xbar = take(Dh);
    T* u = take(D + Dh);
    T* phiq = take(F);
    T* phik = take(F);
    T* vp = take(E);
    T* y = take(E);
    T* fg = take(F);     // feature gate: g
    T* fbeta = take(F);  // feature gate: beta
    const size_t row = static_cast<size_t>(b) * C + static_cast<size_t>(h) * Dh;
    const T* sigma = p.sigma + static_cast<size_t>(h) * Dh;
    const T* W = p.W + static_cast<size_t>(h) * D * Dh;  // (D, Dh)
    // u = W (sigma ⊙ x̄) as D dot products: one token does not pay for packing W.
    auto phi_of = [&](T* phi, const T* x) {
      l2_normalize_forward(xbar, x, Dh, eps_n);
      T* sx = u + D;
      for (int e = 0; e < Dh; ++e) sx[e] = sigma[e] * xbar[e];
      for (int i = 0; i < D; ++i) u[i] = dot(W + static_cast<size_t>(i) * Dh, sx, Dh);
      feature_map_from_u(phi, u, c.feature_map, D);
    };
    phi_of(phiq, in.q + row);
    phi_of(phik, in.k + row);
    GateValues<T> gv{T(0), T(1), T(1)};
    if (c.gated && !c.feature_gate)
      gv = gate_values(dot(p.gate_w + static_cast<size_t>(h) * C, in.n + static_cast<size_t>(b) * C, C) + p.gate_b[h]);
    // Feature gate: a_f = gate_w[h, f]·n + gate_b[h, f] per feature.
    for (int f = 0; f < F && c.feature_gate; ++f) {
      const size_t hf = static_cast<size_t>(h) * F + f;
      const GateValues<T> v = gate_values(dot(p.gate_w + hf * C, in.n + static_cast<size_t>(b) * C, C) + p.gate_b[hf]);
      fg[f] = v.g, fbeta[f] = v.beta;
    }
    const T delta = rfa_discount<T>(c, in.pos0);  // k̃ = delta beta phi(k)
    std::copy(in.v + row, in.v + row + Dh, vp);
    vp[Dh] = T(1);
    T* S = st.S.data() + bh * FE;  // (F, E)
    std::fill(y, y + E, T(0));
    for (int f = 0; f < F; ++f) {
      T* Sf = S + size_t(f) * E;
      const T g = c.feature_gate ? fg[f] : gv.g, beta = c.feature_gate ? fbeta[f] : gv.beta;
      if (c.gated)
        for (int e = 0; e < E; ++e) Sf[e] *= g;
      axpy(Sf, delta * beta * phik[f], vp, E);
      axpy(y, phiq[f], Sf, E);
    }
    const T inv = T(1) / (y[Dh] > eps_d ? y[Dh] : eps_d);
    for (int e = 0; e < Dh; ++e) out[row + e] = y[e] * inv;
  });
}

template <typename T>
void rfa_prefill(T* out, const RfaStateView<T>& state, Workspace<T> workspace, const RfaInputs<T>& in,
                 const RfaParams<T>& p, const RfaConfig& c, const AttentionDims& d) {
  if (d.B != state.B || d.H != state.H || d.Dh != state.Dh)
    fail("rfa prefill: prompt shape B={} H={} Dh={} but the state was made for B={} H={} Dh={}", d.B, d.H, d.Dh,
         state.B, state.H, state.Dh);
  rfa_forward(out, static_cast<T*>(nullptr), workspace, in, p, c, d, state.S, state.S);
}

#define RFA_INSTANTIATE(T)                                                                                 \
  template RfaState<T> rfa_state_create<T>(const RfaConfig&, int, int, int);                              \
  template void rfa_state_reset<T>(RfaState<T>&);                                                         \
  template void rfa_step_reference<T>(T*, RfaState<T>&, const RfaInputs<T>&, const RfaParams<T>&, const RfaConfig&); \
  template void rfa_prefill<T>(T*, const RfaStateView<T>&, Workspace<T>, const RfaInputs<T>&, const RfaParams<T>&, \
                               const RfaConfig&, const AttentionDims&);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
