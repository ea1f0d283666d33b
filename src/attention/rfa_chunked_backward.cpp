// RFA chunked backward, design section 4: a reverse pass over chunks carrying
// dS (the gradient of the state leaving the chunk), with the chunk-entry states
// the forward saved. Per chunk (notation of rfa_chunked_forward.cpp):
//   Y = P V' + diag(eG) Q̂ S_prev,  P = (Q̂ K̃ᵀ) ⊙ M,  S_next = e^{G_C} S_prev + (K̃ ⊙ e^{G_C-G})ᵀ V'
//   dP = dY V'ᵀ (lower),  dA = dP ⊙ M
//   dQ̂ = dA K̃ + diag(eG) dY S_prevᵀ
//   dK̃ = dAᵀ Q̂ + diag(e^{G_C-G}) V' dSᵀ
//   dV' = Pᵀ dY + diag(e^{G_C-G}) K̃ dS
//   dS_prev = e^{G_C} dS + (Q̂ ⊙ eG)ᵀ dY
// The log-gates enter only through differences G_t - G_s paired with q̂_t·k̃_s (and
// e^{G_t} q̂_t), so dG_t = q̂_t·dq̂_t - k̃_t·dk̃_t with the full dq̂, dk̃, and
// dlambda_r = sum_{t>=r} dG_t: a running sum in this reverse pass.
#include <algorithm>
#include <cmath>

#include "attention/attention_tasks.h"
#include "attention/feature_map.h"
#include "attention/rfa_attention.h"
#include "attention/rfa_layout.h"
#include "attention/vector_math.h"
#include "core/error.h"

namespace rfa {
namespace {

template <typename T>
bool all_zero(const T* x, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (x[i] != T(0)) return false;
  return true;
}

// Parameter gradients of the gate from da (B,H,T): reductions over (b, t) done
// outside the per-(b, h) tasks so no two threads write the same entry.
template <typename T>
void gate_backward(const RfaInputGrads<T>& grads, const RfaParamGrads<T>& pg, const T* da, const T* n,
                   const T* gate_w, const AttentionDims& d) {
  const int Tn = d.T, H = d.H, C = d.C();
  // a = gate_w[h]·n_t + gate_b[h]:  dgate_w[h] += sum da n_t,  dgate_b[h] += sum da
  parallel_for(H, [&](int64_t h) {
    T* dw = pg.dgate_w + static_cast<size_t>(h) * C;
    T db = 0;
    for (int b = 0; b < d.B; ++b)
      for (int t = 0; t < Tn; ++t) {
        const T g = da[(static_cast<size_t>(b) * H + h) * Tn + t];
        db += g;
        axpy(dw, g, n + (static_cast<size_t>(b) * Tn + t) * C, C);
      }
    pg.dgate_b[h] += db;
  });
  // dn_t += sum_h da gate_w[h]
  if (grads.dn)
    parallel_for(int64_t(d.B) * Tn, [&](int64_t bt) {
      const int b = static_cast<int>(bt / Tn), t = static_cast<int>(bt % Tn);
      for (int h = 0; h < H; ++h)
        axpy(grads.dn + bt * C, da[(static_cast<size_t>(b) * H + h) * Tn + t], gate_w + static_cast<size_t>(h) * C, C);
    });
}

}  // namespace

template <typename T>
void rfa_backward(const RfaInputGrads<T>& grads, const RfaParamGrads<T>& pgrads, Workspace<T> workspace,
                  const T* dout, const T* out, const T* saved, const RfaInputs<T>& in, const RfaParams<T>& p,
                  const RfaConfig& c, const AttentionDims& d) {
  const RfaSavedLayout L = rfa_saved_layout(c, d);
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C(), D = c.num_features, F = L.F, E = L.E, Cc = c.chunk_size;
  const int threads = thread_count();
  RFA_ASSERT(workspace.size >= rfa_workspace_size(c, d, threads), "rfa workspace {} < {}", workspace.size,
             rfa_workspace_size(c, d, threads));
  RFA_ASSERT(!c.gated || (in.n && p.gate_w && pgrads.dgate_w && pgrads.dgate_b), "gated RFA needs n and gate grads");
  const T eps_d = T(c.eps_d);
  const size_t per_thread = std::max(rfa_forward_scratch_size(c, d), rfa_backward_scratch_size(c, d));
  const size_t FE = static_cast<size_t>(F) * E;
  T* dsigma_parts = workspace.data;                               // (B, H, Dh)
  T* da = dsigma_parts + static_cast<size_t>(d.B) * H * Dh;       // (B, H, T)
  T* thread_slices = workspace.data + rfa_backward_shared_size(d);

  attention_tasks_run(int64_t(d.B) * H, thread_slices, per_thread, threads, [&](int64_t bh, T* scratch) {
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H);
    T* at = scratch;
    auto take = [&](size_t n) { T* r = at; at += n; return r; };
    T* xbar = take(Dh);
    T* dxbar = take(Dh);
    T* du = take(D);
    T* Kt = take(size_t(Cc) * F);   // (c, F) k̃
    T* KtT = take(size_t(F) * Cc);  // (F, c)
    T* dQ = take(size_t(Cc) * F);   // (c, F) dq̂
    T* dK = take(size_t(Cc) * F);   // (c, F) dk̃
    T* Vp = take(size_t(Cc) * E);   // (c, E) [v, 1]
    T* VpT = take(size_t(E) * Cc);  // (E, c)
    T* dY = take(size_t(Cc) * E);   // (c, E) [dnum, dden]
    T* dV = take(size_t(Cc) * E);   // (c, E) dv'
    T* M = take(size_t(Cc) * Cc);   // (c, c) exp(G_i - G_j), lower
    T* P = take(size_t(Cc) * Cc);   // (c, c) (Q̂ K̃ᵀ) ⊙ M
    T* dA = take(size_t(Cc) * Cc);  // (c, c) dP ⊙ M
    T* G = take(Cc);
    T* eG = take(Cc);
    T* beta = take(Cc);
    T* g = take(Cc);
    T* dS = take(FE);   // (F, E) gradient of the state leaving the current chunk
    T* dST = take(FE);  // (E, F)
    T* SpT = take(FE);  // (E, F) S_prev transposed
    RFA_ASSERT(static_cast<size_t>(at - scratch) <= per_thread, "backward scratch overflow");

    const T* sigma = p.sigma + static_cast<size_t>(h) * Dh;
    const T* W = p.W + static_cast<size_t>(h) * D * Dh;
    T* dsigma = dsigma_parts + static_cast<size_t>(bh) * Dh;
    std::fill(dsigma, dsigma + Dh, T(0));
    std::fill(dS, dS + FE, T(0));
    bool dS_zero = true;
    T dlambda = 0;  // running sum_{t >= r} dG_t

    for (int ci = L.n_chunks - 1; ci >= 0; --ci) {
      const int t0 = ci * Cc, n = std::min(Cc, Tn - t0);
      const size_t bht0 = static_cast<size_t>(bh) * Tn + t0;
      const T* phiq = saved + L.phi_q + bht0 * F;
      const T* phik = saved + L.phi_k + bht0 * F;
      const T* S_prev = saved + L.states + (static_cast<size_t>(bh) * L.n_chunks + ci) * FE;
      auto row_of = [&](int i) { return (static_cast<size_t>(b) * Tn + t0 + i) * C + static_cast<size_t>(h) * Dh; };

      // Recompute the chunk: gates, k̃, v', M, P; and dY from dout through the floor.
      for (int i = 0; i < n; ++i) {
        GateValues<T> gv{T(0), T(1), T(1)};
        if (c.gated) gv = gate_values(saved[L.gate_a + bht0 + i]);
        G[i] = (i ? G[i - 1] : T(0)) + gv.lambda;
        eG[i] = std::exp(G[i]);
        beta[i] = gv.beta;
        g[i] = gv.g;
        for (int f = 0; f < F; ++f) Kt[size_t(i) * F + f] = gv.beta * phik[size_t(i) * F + f];
        std::copy(in.v + row_of(i), in.v + row_of(i) + Dh, Vp + size_t(i) * E);
        Vp[size_t(i) * E + Dh] = T(1);
        // out = num / max(den, eps_d): above the floor dnum = dh/den, dden = -(dh·out)/den;
        // on the floor dnum = dh/eps_d and dden = 0 (the floor is a constant there).
        const T den = saved[L.den + bht0 + i];
        const T* dh = dout + row_of(i);
        T* dYi = dY + size_t(i) * E;
        const bool above = den > eps_d;
        const T inv = T(1) / (above ? den : eps_d);
        for (int e = 0; e < Dh; ++e) dYi[e] = dh[e] * inv;
        dYi[Dh] = above ? -dot(dh, out + row_of(i), Dh) * inv : T(0);
      }
      for (int j = 0; j < n; ++j) {
        for (int f = 0; f < F; ++f) KtT[size_t(f) * Cc + j] = Kt[size_t(j) * F + f];
        for (int e = 0; e < E; ++e) VpT[size_t(e) * Cc + j] = Vp[size_t(j) * E + e];
      }
      std::fill(dQ, dQ + size_t(n) * F, T(0));
      std::fill(dK, dK + size_t(n) * F, T(0));
      std::fill(dV, dV + size_t(n) * E, T(0));
      for (int i = 0; i < n; ++i) {
        T* Mi = M + size_t(i) * Cc;
        T* Pi = P + size_t(i) * Cc;
        T* dAi = dA + size_t(i) * Cc;
        const T* dYi = dY + size_t(i) * E;
        const T* qi = phiq + size_t(i) * F;
        for (int j = 0; j <= i; ++j) Mi[j] = G[i] - G[j];
        exp_row(Mi, i + 1);
        std::fill(Pi, Pi + i + 1, T(0));
        for (int f = 0; f < F; ++f) axpy(Pi, qi[f], KtT + size_t(f) * Cc, i + 1);
        std::fill(dAi, dAi + i + 1, T(0));
        for (int e = 0; e < E; ++e) axpy(dAi, dYi[e], VpT + size_t(e) * Cc, i + 1);  // dP = dY V'ᵀ
        for (int j = 0; j <= i; ++j) {
          Pi[j] *= Mi[j];
          dAi[j] *= Mi[j];
        }
        // Y_i = sum_j P_ij v'_j, P_ij = (q̂_i·k̃_j) M_ij
        for (int j = 0; j <= i; ++j) {
          axpy(dV + size_t(j) * E, Pi[j], dYi, E);
          axpy(dQ + size_t(i) * F, dAi[j], Kt + size_t(j) * F, F);
          axpy(dK + size_t(j) * F, dAi[j], qi, F);
        }
      }
      // Y_i += eG_i q̂_iᵀ S_prev:  dq̂_i += eG_i S_prev dy_i
      if (!all_zero(S_prev, FE)) {
        for (int f = 0; f < F; ++f)
          for (int e = 0; e < E; ++e) SpT[size_t(e) * F + f] = S_prev[size_t(f) * E + e];
        for (int i = 0; i < n; ++i)
          for (int e = 0; e < E; ++e) axpy(dQ + size_t(i) * F, eG[i] * dY[size_t(i) * E + e], SpT + size_t(e) * F, F);
      }
      // S_next += e^{G_C - G_j} k̃_j v'_jᵀ:  dk̃_j += w_j dS v'_j,  dv'_j += w_j dSᵀ k̃_j
      const T gC = G[n - 1], decay = eG[n - 1];
      if (!dS_zero) {
        for (int f = 0; f < F; ++f)
          for (int e = 0; e < E; ++e) dST[size_t(e) * F + f] = dS[size_t(f) * E + e];
        for (int j = 0; j < n; ++j) {
          const T w = std::exp(gC - G[j]);
          for (int e = 0; e < E; ++e) axpy(dK + size_t(j) * F, w * Vp[size_t(j) * E + e], dST + size_t(e) * F, F);
          for (int f = 0; f < F; ++f) axpy(dV + size_t(j) * E, w * Kt[size_t(j) * F + f], dS + size_t(f) * E, E);
        }
      }
      // dS_prev = e^{G_C} dS + (Q̂ ⊙ eG)ᵀ dY
      for (size_t x = 0; x < FE; ++x) dS[x] *= decay;
      for (int i = 0; i < n; ++i)
        for (int f = 0; f < F; ++f) axpy(dS + size_t(f) * E, eG[i] * phiq[size_t(i) * F + f], dY + size_t(i) * E, E);
      dS_zero = false;

      // Per token, last to first: log-gate, gate, feature maps, normalisation.
      for (int i = n - 1; i >= 0; --i) {
        const size_t row = row_of(i);
        T* dKi = dK + size_t(i) * F;
        const T* Kti = Kt + size_t(i) * F;
        if (c.gated) {
          const T k_dk = dot(Kti, dKi, F);
          dlambda += dot(phiq + size_t(i) * F, dQ + size_t(i) * F, F) - k_dk;  // dG_t
          // lambda = logsigmoid(a), k̃ = beta phi(k), beta = 1 - sigmoid(a):
          //   da = beta dlambda - g (dk̃·k̃)
          da[bht0 + i] = beta[i] * dlambda - g[i] * k_dk;
          for (int f = 0; f < F; ++f) dKi[f] *= beta[i];  // dphi(k) = beta dk̃
        }
        for (int e = 0; e < Dh; ++e) grads.dv[row + e] += dV[size_t(i) * E + e];
        // q̂ = phi(x̄_q), x̄_q = r_q q
        const T rq = saved[L.r_q + bht0 + i];
        for (int e = 0; e < Dh; ++e) xbar[e] = in.q[row + e] * rq;
        std::fill(dxbar, dxbar + Dh, T(0));
        feature_map_backward(dxbar, dsigma, du, dQ + size_t(i) * F, phiq + size_t(i) * F, xbar, sigma, W,
                             c.feature_map, D, Dh);
        l2_normalize_backward(grads.dq + row, dxbar, xbar, rq, Dh);
        const T rk = saved[L.r_k + bht0 + i];
        for (int e = 0; e < Dh; ++e) xbar[e] = in.k[row + e] * rk;
        std::fill(dxbar, dxbar + Dh, T(0));
        feature_map_backward(dxbar, dsigma, du, dKi, phik + size_t(i) * F, xbar, sigma, W, c.feature_map, D, Dh);
        l2_normalize_backward(grads.dk + row, dxbar, xbar, rk, Dh);
      }
    }
  });

  // dsigma[h] += sum_b partials (serial: H*B*Dh adds).
  for (int h = 0; h < H; ++h)
    for (int b = 0; b < d.B; ++b)
      axpy(pgrads.dsigma + static_cast<size_t>(h) * Dh, T(1), dsigma_parts + (static_cast<size_t>(b) * H + h) * Dh, Dh);
  if (c.gated) gate_backward(grads, pgrads, da, in.n, p.gate_w, d);
}

#define RFA_INSTANTIATE(T)                                                                               \
  template void rfa_backward<T>(const RfaInputGrads<T>&, const RfaParamGrads<T>&, Workspace<T>,        \
                                const T*, const T*, const T*, const RfaInputs<T>&, const RfaParams<T>&, \
                                const RfaConfig&, const AttentionDims&);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
