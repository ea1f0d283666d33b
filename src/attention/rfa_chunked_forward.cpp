// RFA chunked forward, docs/rfa-attention.md section 3. Per (b, h), chunks in order; inside a
// chunk of c rows with chunk-local cumulative log-gates G (fp32 or better):
//   M_ij   = exp(G_i - G_j) for j <= i, else 0        (built as products of gates: no exp, no overflow)
//   Y      = ((Q̂ K̃ᵀ) ⊙ M) V'  +  diag(exp(G)) Q̂ S_prev
//   S_next = exp(G_C) S_prev + (K̃ ⊙ exp(G_C - G))ᵀ V'
// Products are matmul calls (4 rows at a time times a padded matrix, accumulated in registers).
#include <algorithm>
#include <cmath>

#include "attention/attention_tasks.h"
#include "attention/feature_map.h"
#include "attention/rfa_attention.h"
#include "attention/rfa_feature_gate.h"
#include "attention/rfa_gate_products.h"
#include "attention/rfa_layout.h"
#include "attention/rfa_scratch.h"
#include "kernels/vector_math.h"
#include "core/error.h"

namespace rfa {

template <typename T>
void rfa_forward(T* out, T* saved, Workspace<T> workspace, const RfaInputs<T>& in, const RfaParams<T>& p,
                 const RfaConfig& c, const AttentionDims& d, const T* state_in, T* state_out) {
  if (c.feature_gate) return rfa_feature_forward(out, saved, workspace, in, p, c, d, state_in, state_out);
  const RfaSavedLayout L = rfa_saved_layout(c, d);
  const RfaScratchDims sd = rfa_scratch_dims(c, d);
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C(), D = c.num_features, F = L.F, E = L.E, Cc = int(sd.Cc);
  const size_t CP = sd.CP, EP = sd.EP;
  const int threads = thread_count();
  RFA_ASSERT(workspace.size >= rfa_workspace_size(c, d, threads), "rfa workspace {} < {}", workspace.size,
             rfa_workspace_size(c, d, threads));
  RFA_ASSERT(!c.gated || (in.n && p.gate_w && p.gate_b), "gated RFA needs n, gate_w and gate_b");
  const T eps_n = T(c.eps_n), eps_d = T(c.eps_d);
  const size_t per_thread = rfa_thread_scratch_size(c, d);
  RfaBackwardShared<T> shared;  // the forward uses its gate_a when nothing is saved
  T* thread_slices = workspace.data + shared.carve(workspace.data, c, d, threads);
  T* gate_a = nullptr;  // (B, T, H) every row's and head's gate pre-activation: one gemm
  if (c.gated) {
    gate_a = saved ? saved + L.gate_a : shared.gate_a;
    rfa_gate_preact(gate_a, in.n, p.gate_w, p.gate_b, int64_t(d.B) * Tn, H, C);
  }
  const size_t FE = static_cast<size_t>(F) * E;

  attention_tasks_run(int64_t(d.B) * H, thread_slices, per_thread, threads, [&](int64_t bh, T* scratch) {
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H);
    RfaForwardScratch<T> sc;
    sc.carve(scratch, sd);
    T *xbar = sc.xbar, *SX = sc.SX, *U = sc.U, *beta = sc.beta, *g = sc.g, *Kt = sc.Kt, *KtT = sc.KtT,
      *Kw = sc.Kw, *Vp = sc.Vp, *Y = sc.Y, *arow = sc.arow, *eG = sc.eG, *mrow = sc.mrow, *S = sc.S,
      *Wt = sc.Wt, *Qe = sc.Qe;

    const T* sigma = p.sigma + static_cast<size_t>(h) * Dh;
    feature_map_pack_forward(Wt, p.W + static_cast<size_t>(h) * D * Dh, D, Dh);
    bool state_zero = state_in == nullptr;
    if (saved) saved[L.state_flags + bh] = state_zero ? T(0) : T(1);
    if (!state_zero)
      for (int f = 0; f < F; ++f) std::copy_n(state_in + bh * FE + size_t(f) * E, E, S + f * EP);

    for (int ci = 0; ci < L.n_chunks; ++ci) {
      const int t0 = ci * Cc, n = std::min(Cc, Tn - t0);
      const size_t bht0 = static_cast<size_t>(bh) * Tn + t0;
      T* phiq = saved ? saved + L.phi_q + bht0 * F : sc.phiq_scratch;  // (c, F)
      T* phik = saved ? saved + L.phi_k + bht0 * F : sc.phik_scratch;  // (c, F)
      T* P = saved ? saved + L.P + (static_cast<size_t>(bh) * L.n_chunks + ci) * Cc * Cc : sc.P_scratch;  // (c, c)
      if (saved) {
        T* entry = saved + L.states + (static_cast<size_t>(bh) * L.n_chunks + ci) * FE;
        for (int f = 0; f < F; ++f) {
          if (state_zero) std::fill_n(entry + size_t(f) * E, E, T(0));
          else std::copy_n(S + f * EP, E, entry + size_t(f) * E);
        }
      }

      // Rows of the chunk: normalisation, gate, augmented values; then the feature maps as products.
      for (int i = 0; i < n; ++i) {
        const size_t row = (static_cast<size_t>(b) * Tn + t0 + i) * C + static_cast<size_t>(h) * Dh;
        T r = l2_normalize_forward(xbar, in.q + row, Dh, eps_n);
        // omp simd on the per-row loops: the buffers never overlap, but the compiler
        // cannot prove it through the scratch pointers and would run them scalar.
#pragma omp simd
        for (int e = 0; e < Dh; ++e) SX[size_t(i) * Dh + e] = sigma[e] * xbar[e];
        if (saved) saved[L.r_q + bht0 + i] = r;
        r = l2_normalize_forward(xbar, in.k + row, Dh, eps_n);
#pragma omp simd
        for (int e = 0; e < Dh; ++e) SX[size_t(Cc + i) * Dh + e] = sigma[e] * xbar[e];
        if (saved) saved[L.r_k + bht0 + i] = r;
        if (c.gated) arow[i] = gate_a[(static_cast<size_t>(b) * Tn + t0 + i) * H + h];
        std::copy(in.v + row, in.v + row + Dh, Vp + i * EP);
        Vp[i * EP + Dh] = T(1);
      }
      gate_rows(g, beta, eG, c.gated ? arow : nullptr, n);
      if (c.time_discount)  // k̃_j = delta(t_j) beta_j phi(k_j): beta no longer read on its own below
        for (int j = 0; j < n; ++j) beta[j] *= rfa_discount<T>(c, in.pos0 + t0 + j);
      feature_map_forward_rows(phiq, U, SX, Wt, c.feature_map, n, D, Dh);
      feature_map_forward_rows(phik, U, SX + size_t(Cc) * Dh, Wt, c.feature_map, n, D, Dh);
      for (int j = 0; j < n; ++j)
        for (int f = 0; f < F; ++f) {
          Kt[size_t(j) * F + f] = beta[j] * phik[size_t(j) * F + f];
          KtT[f * CP + j] = Kt[size_t(j) * F + f];
        }

      // P = (Q̂ K̃ᵀ) ⊙ M over the whole chunk, then 0 right of the diagonal (the backward reads
      // P's columns too). One product of n rows keeps the register tiles at full height: the
      // triangle in blocks of 4 rows did half the multiply-adds at a third of the rate.
      matmul(P, Cc, phiq, F, KtT, CP, n, F, n, T(1), false);
      for (int i = 0; i < n; ++i) {
        T* Pi = P + size_t(i) * Cc;
        if (c.gated) {  // ungated: M = 1 on the lower triangle
          // Row i of M from row i-1: M_ij = exp(G_i - G_j) = prod_{r=j+1..i} g_r = M_{i-1,j} g_i.
          for (int j = 0; j < i; ++j) mrow[j] *= g[i];
          mrow[i] = T(1);
          for (int j = 0; j <= i; ++j) Pi[j] *= mrow[j];
        }
        for (int j = i + 1; j < n; ++j) Pi[j] = T(0);
      }
      // Y = P V' + diag(exp G) Q̂ S_prev; V' ends in a column of ones, so the product's last
      // column is the denominator, P's row sums (in the order a plain loop would add them,
      // without that loop's chain of dependent adds).
      matmul(Y, E, P, Cc, Vp, EP, n, n, E, T(1), false);
      if (!state_zero) {  // Y += diag(exp G) Q̂ S_prev
        for (int i = 0; i < n; ++i)
          for (int f = 0; f < F; ++f) Qe[size_t(i) * F + f] = eG[i] * phiq[size_t(i) * F + f];
        matmul(Y, E, Qe, F, S, EP, n, F, E, T(1), true);
      }
      for (int i = 0; i < n; ++i) {
        T* Yi = Y + size_t(i) * E;
        // out = num / max(den, eps_d)
        const T den = Yi[Dh];
        if (saved) saved[L.den + bht0 + i] = den;
        const T inv = T(1) / (den > eps_d ? den : eps_d);
        T* o = out + (static_cast<size_t>(b) * Tn + t0 + i) * C + static_cast<size_t>(h) * Dh;
#pragma omp simd
        for (int e = 0; e < Dh; ++e) o[e] = Yi[e] * inv;
      }

      // S_next = exp(G_C) S_prev + (K̃ ⊙ exp(G_C - G))ᵀ V'; skipped after the last chunk unless asked for.
      if (ci + 1 < L.n_chunks || state_out) {
        const T decay = eG[n - 1];
        gate_suffix(mrow, g, n);  // after the P loop, so mrow's use as a row of M is over
        for (int j = 0; j < n; ++j)
          for (int f = 0; f < F; ++f) Kw[size_t(j) * F + f] = Kt[size_t(j) * F + f] * mrow[j];
        if (!state_zero)
          for (size_t x = 0; x < size_t(F) * EP; ++x) S[x] *= decay;
        matmul_at(S, EP, Kw, F, Vp, EP, F, n, E, T(1), !state_zero);  // S (F, E) += Kwᵀ V'
        state_zero = false;
      }
    }
    if (state_out) {
      for (int f = 0; f < F; ++f) {
        if (state_zero) std::fill_n(state_out + bh * FE + size_t(f) * E, E, T(0));
        else std::copy_n(S + f * EP, E, state_out + bh * FE + size_t(f) * E);
      }
    }
  });
}

#define RFA_INSTANTIATE(T)                                                                             \
  template void rfa_forward<T>(T*, T*, Workspace<T>, const RfaInputs<T>&, const RfaParams<T>&,       \
                               const RfaConfig&, const AttentionDims&, const T*, T*);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
