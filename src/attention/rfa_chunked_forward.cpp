// RFA chunked forward, design section 3. Per (b, h), chunks in order; inside a
// chunk of c rows with chunk-local cumulative log-gates G (fp32 or better):
//   M_ij   = exp(G_i - G_j) for j <= i, else 0        (masked before exp: exponents <= 0)
//   Y      = ((Q̂ K̃ᵀ) ⊙ M) V'  +  diag(exp(G)) Q̂ S_prev
//   S_next = exp(G_C) S_prev + (K̃ ⊙ exp(G_C - G))ᵀ V'
#include <algorithm>
#include <cmath>

#include "attention/attention_tasks.h"
#include "attention/feature_map.h"
#include "attention/rfa_attention.h"
#include "attention/rfa_layout.h"
#include "attention/vector_math.h"
#include "core/error.h"

namespace rfa {

template <typename T>
void rfa_forward(T* out, T* saved, Workspace<T> workspace, const RfaInputs<T>& in, const RfaParams<T>& p,
                 const RfaConfig& c, const AttentionDims& d, const T* state_in, T* state_out) {
  const RfaSavedLayout L = rfa_saved_layout(c, d);
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C(), D = c.num_features, F = L.F, E = L.E, Cc = c.chunk_size;
  const int threads = thread_count();
  RFA_ASSERT(workspace.size >= rfa_workspace_size(c, d, threads), "rfa workspace {} < {}", workspace.size,
             rfa_workspace_size(c, d, threads));
  RFA_ASSERT(!c.gated || (in.n && p.gate_w && p.gate_b), "gated RFA needs n, gate_w and gate_b");
  const T eps_n = T(c.eps_n), eps_d = T(c.eps_d);
  const size_t per_thread = std::max(rfa_forward_scratch_size(c, d), rfa_backward_scratch_size(c, d));
  T* thread_slices = workspace.data + rfa_backward_shared_size(d);
  const size_t FE = static_cast<size_t>(F) * E;

  attention_tasks_run(int64_t(d.B) * H, thread_slices, per_thread, threads, [&](int64_t bh, T* scratch) {
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H);
    T* at = scratch;
    auto take = [&](size_t n) { T* r = at; at += n; return r; };
    T* xbar = take(Dh);
    T* u = take(D);
    T* phiq_scratch = take(size_t(Cc) * F);  // used when nothing is saved
    T* phik_scratch = take(size_t(Cc) * F);
    T* Kt = take(size_t(Cc) * F);    // (c, F)  k̃ = beta phi(k)
    T* KtT = take(size_t(F) * Cc);   // (F, c)  transposed for the Q̂ K̃ᵀ product in axpy form
    T* Vp = take(size_t(Cc) * E);    // (c, E)  [v, 1]
    T* Y = take(size_t(Cc) * E);     // (c, E)  [num, den]
    T* P = take(size_t(Cc) * Cc);    // (c, c)  (Q̂ K̃ᵀ) ⊙ M, lower triangle
    T* G = take(Cc);                 // (c)     chunk-local cumulative log-gate
    T* eG = take(Cc);                // (c)     exp(G)
    T* mrow = take(Cc);              // (c)     one row of M
    T* S = take(FE);                 // (F, E)  running state
    T* Wt = take(size_t(Dh) * D);    // (Dh, D) this head's W transposed
    RFA_ASSERT(static_cast<size_t>(at - scratch) <= per_thread, "forward scratch overflow");

    const T* sigma = p.sigma + static_cast<size_t>(h) * Dh;
    feature_map_transpose(Wt, p.W + static_cast<size_t>(h) * D * Dh, D, Dh);
    const T* gate_w = c.gated ? p.gate_w + static_cast<size_t>(h) * C : nullptr;
    bool state_zero = state_in == nullptr;
    if (state_zero) std::fill(S, S + FE, T(0));
    else std::copy(state_in + bh * FE, state_in + (bh + 1) * FE, S);

    for (int ci = 0; ci < L.n_chunks; ++ci) {
      const int t0 = ci * Cc, n = std::min(Cc, Tn - t0);
      const size_t bht0 = static_cast<size_t>(bh) * Tn + t0;
      T* phiq = saved ? saved + L.phi_q + bht0 * F : phiq_scratch;  // (c, F)
      T* phik = saved ? saved + L.phi_k + bht0 * F : phik_scratch;  // (c, F)
      if (saved) std::copy(S, S + FE, saved + L.states + (static_cast<size_t>(bh) * L.n_chunks + ci) * FE);

      // Rows of the chunk: feature maps, gate, augmented values.
      for (int i = 0; i < n; ++i) {
        const size_t row = (static_cast<size_t>(b) * Tn + t0 + i) * C + static_cast<size_t>(h) * Dh;
        T r = l2_normalize_forward(xbar, in.q + row, Dh, eps_n);
        feature_map_forward(phiq + size_t(i) * F, u, xbar, sigma, Wt, c.feature_map, D, Dh);
        if (saved) saved[L.r_q + bht0 + i] = r;
        r = l2_normalize_forward(xbar, in.k + row, Dh, eps_n);
        feature_map_forward(phik + size_t(i) * F, u, xbar, sigma, Wt, c.feature_map, D, Dh);
        if (saved) saved[L.r_k + bht0 + i] = r;
        GateValues<T> gv{T(0), T(1), T(1)};
        if (c.gated) {
          const T a = dot(gate_w, in.n + (static_cast<size_t>(b) * Tn + t0 + i) * C, C) + p.gate_b[h];
          gv = gate_values(a);
          if (saved) saved[L.gate_a + bht0 + i] = a;
        }
        G[i] = (i ? G[i - 1] : T(0)) + gv.lambda;
        eG[i] = std::exp(G[i]);
        for (int f = 0; f < F; ++f) Kt[size_t(i) * F + f] = gv.beta * phik[size_t(i) * F + f];
        std::copy(in.v + row, in.v + row + Dh, Vp + size_t(i) * E);
        Vp[size_t(i) * E + Dh] = T(1);
      }
      for (int j = 0; j < n; ++j)
        for (int f = 0; f < F; ++f) KtT[size_t(f) * Cc + j] = Kt[size_t(j) * F + f];

      // P = (Q̂ K̃ᵀ) ⊙ M on the lower triangle; Y = P V' + diag(exp G) Q̂ S_prev.
      for (int i = 0; i < n; ++i) {
        T* Pi = P + size_t(i) * Cc;
        std::fill(Pi, Pi + i + 1, T(0));
        for (int f = 0; f < F; ++f) axpy(Pi, phiq[size_t(i) * F + f], KtT + size_t(f) * Cc, i + 1);
        if (c.gated) {  // ungated: M = 1 on the lower triangle
          for (int j = 0; j <= i; ++j) mrow[j] = G[i] - G[j];
          exp_row(mrow, i + 1);
          for (int j = 0; j <= i; ++j) Pi[j] *= mrow[j];
        }
        T* Yi = Y + size_t(i) * E;
        std::fill(Yi, Yi + E, T(0));
        for (int j = 0; j <= i; ++j) axpy(Yi, Pi[j], Vp + size_t(j) * E, E);
        if (!state_zero)
          for (int f = 0; f < F; ++f) axpy(Yi, eG[i] * phiq[size_t(i) * F + f], S + size_t(f) * E, E);
        // out = num / max(den, eps_d)
        const T den = Yi[Dh];
        if (saved) saved[L.den + bht0 + i] = den;
        const T inv = T(1) / (den > eps_d ? den : eps_d);
        T* o = out + (static_cast<size_t>(b) * Tn + t0 + i) * C + static_cast<size_t>(h) * Dh;
        for (int e = 0; e < Dh; ++e) o[e] = Yi[e] * inv;
      }

      // S_next = exp(G_C) S_prev + (K̃ ⊙ exp(G_C - G))ᵀ V'; skipped after the last chunk unless asked for.
      if (ci + 1 < L.n_chunks || state_out) {
        const T gC = G[n - 1], decay = eG[n - 1];
        if (state_zero) std::fill(S, S + FE, T(0));
        else for (size_t x = 0; x < FE; ++x) S[x] *= decay;
        for (int j = 0; j < n; ++j) {
          const T w = std::exp(gC - G[j]);
          for (int f = 0; f < F; ++f) axpy(S + size_t(f) * E, w * Kt[size_t(j) * F + f], Vp + size_t(j) * E, E);
        }
        state_zero = false;
      }
    }
    if (state_out) std::copy(S, S + FE, state_out + bh * FE);
  });
}

#define RFA_INSTANTIATE(T)                                                                             \
  template void rfa_forward<T>(T*, T*, Workspace<T>, const RfaInputs<T>&, const RfaParams<T>&,       \
                               const RfaConfig&, const AttentionDims&, const T*, T*);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
