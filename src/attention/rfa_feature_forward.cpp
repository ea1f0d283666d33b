// RFA-Gate with the feature gate, chunked forward (rfa_feature_gate.h; docs/rfa-attention.md
// section 5). Per (b, h), chunks in order; inside a chunk of n rows:
//   P_ij = sum_f q̂_if k̃_jf exp(G_if - G_jf)  (j <= i; sub-chunk pairs as products, diagonal blocks directly)
//   Y    = P V' + (Q̂ ⊙ eG) S_prev
//   S_next = diag(eG_{n-1}) S_prev + (K̃ ⊙ w)ᵀ V'
// The gate pre-activations of all rows and heads are one gemm before the per-(b, h) tasks.
#include <algorithm>
#include <cmath>

#include "attention/attention_tasks.h"
#include "attention/feature_map.h"
#include "attention/rfa_attention.h"
#include "attention/rfa_feature_gate.h"
#include "attention/rfa_layout.h"
#include "attention/rfa_scratch.h"
#include "core/error.h"
#include "core/parallel.h"
#include "attention/rfa_gate_products.h"
#include "kernels/vector_math.h"

namespace rfa {

template <typename T>
void rfa_feature_forward(T* out, T* saved, Workspace<T> workspace, const RfaInputs<T>& in, const RfaParams<T>& p,
                         const RfaConfig& c, const AttentionDims& d, const T* state_in, T* state_out) {
  const RfaSavedLayout L = rfa_saved_layout(c, d);
  const RfaScratchDims sd = rfa_scratch_dims(c, d);
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C(), D = c.num_features, F = L.F, E = L.E, Cc = int(sd.Cc);
  const size_t CP = sd.CP, EP = sd.EP, HF = size_t(H) * F;
  const int threads = thread_count();
  RFA_ASSERT(workspace.size >= rfa_workspace_size(c, d, threads), "rfa workspace {} < {}", workspace.size,
             rfa_workspace_size(c, d, threads));
  RFA_ASSERT(c.gated && in.n && p.gate_w && p.gate_b, "the feature gate needs n, gate_w and gate_b");
  const T eps_n = T(c.eps_n), eps_d = T(c.eps_d);
  RfaBackwardShared<T> shared;
  const size_t shared_size = shared.carve(workspace.data, c, d, threads);
  T* gate_a = saved ? saved + L.gate_a : shared.gate_a;  // (B, T, H, F)
  rfa_gate_preact(gate_a, in.n, p.gate_w, p.gate_b, int64_t(d.B) * Tn, int(HF), C);
  T* thread_slices = workspace.data + shared_size;
  const size_t FE = static_cast<size_t>(F) * E;
  constexpr int kSub = kFeatureGateSub;

  attention_tasks_run(int64_t(d.B) * H, thread_slices, rfa_thread_scratch_size(c, d), threads,
                      [&](int64_t bh, T* scratch) {
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H);
    RfaFeatureForwardScratch<T> sc;
    sc.carve(scratch, sd);
    const T* sigma = p.sigma + static_cast<size_t>(h) * Dh;
    feature_map_pack_forward(sc.Wt, p.W + static_cast<size_t>(h) * D * Dh, D, Dh);
    bool state_zero = state_in == nullptr;
    if (saved) saved[L.state_flags + bh] = state_zero ? T(0) : T(1);
    if (!state_zero)
      for (int f = 0; f < F; ++f) std::copy_n(state_in + bh * FE + size_t(f) * E, E, sc.S + f * EP);

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
          else std::copy_n(sc.S + f * EP, E, entry + size_t(f) * E);
        }
      }

      // Rows: normalisation, augmented values; gates; feature maps as products.
      for (int i = 0; i < n; ++i) {
        const size_t row = (static_cast<size_t>(b) * Tn + t0 + i) * C + static_cast<size_t>(h) * Dh;
        T r = l2_normalize_forward(sc.xbar, in.q + row, Dh, eps_n);
#pragma omp simd
        for (int e = 0; e < Dh; ++e) sc.SX[size_t(i) * Dh + e] = sigma[e] * sc.xbar[e];
        if (saved) saved[L.r_q + bht0 + i] = r;
        r = l2_normalize_forward(sc.xbar, in.k + row, Dh, eps_n);
#pragma omp simd
        for (int e = 0; e < Dh; ++e) sc.SX[size_t(Cc + i) * Dh + e] = sigma[e] * sc.xbar[e];
        if (saved) saved[L.r_k + bht0 + i] = r;
        std::copy(in.v + row, in.v + row + Dh, sc.Vp + i * EP);
        sc.Vp[i * EP + Dh] = T(1);
      }
      feature_gate_rows(sc.rows(), gate_a + (static_cast<size_t>(b) * Tn + t0) * HF + size_t(h) * F, HF, n, F);
      feature_map_forward_rows(phiq, sc.U, sc.SX, sc.Wt, c.feature_map, n, D, Dh);
      feature_map_forward_rows(phik, sc.U, sc.SX + size_t(Cc) * Dh, sc.Wt, c.feature_map, n, D, Dh);
      for (int j = 0; j < n; ++j) {
        const T delta = rfa_discount<T>(c, in.pos0 + t0 + j);
        const size_t jF = size_t(j) * F;
        const T *beta = sc.beta + jF, *pk = phik + jF, *pq = phiq + jF, *A = sc.A + jF;
        T *Kt = sc.Kt + jF, *QA = sc.QA + jF;
#pragma omp simd
        for (int f = 0; f < F; ++f) {
          Kt[f] = delta * beta[f] * pk[f];  // k̃ = delta beta ⊙ phi(k)
          QA[f] = pq[f] * A[f];
        }
      }
      for (int f = 0; f < F; ++f)
        for (int j = 0; j < n; ++j) sc.KsT[f * CP + j] = sc.Kt[size_t(j) * F + f] * sc.Ks[size_t(j) * F + f];

      // P, lower triangle (zeros above, read by Y's 4-row blocks), a sub-chunk I of rows at a time.
      for (int i = 0; i < n; ++i) std::fill_n(P + size_t(i) * Cc, n, T(0));
      for (int I0 = 0; I0 < n; I0 += kSub) {
        const int sI = std::min(kSub, n - I0);
        // Diagonal block: P_ij = q̂_i · (k̃_j ⊙ prod_{r=j+1..i} g_r), j from i down to I0.
        for (int i = I0; i < I0 + sI; ++i)
          feature_gate_diag_scores(P + size_t(i) * Cc, phiq + size_t(i) * F, sc.Kt, F, sc.g, F, i, I0, F);
        // Earlier sub-chunks J (last first): P_IJ = (QA_I ⊙ B_IJ)(K̃_J ⊙ Ks_J)ᵀ, B_IJ ⊙= A_{J1} after J.
        std::fill_n(sc.Bv, F, T(1));
        for (int J0 = I0 - kSub; J0 >= 0; J0 -= kSub) {
          for (int i = 0; i < sI; ++i) {
            const T* qa = sc.QA + size_t(I0 + i) * F;
            T* qb = sc.Qb + size_t(i) * F;
            const T* Bv = sc.Bv;
#pragma omp simd
            for (int f = 0; f < F; ++f) qb[f] = qa[f] * Bv[f];
          }
          matmul(P + size_t(I0) * Cc + J0, Cc, sc.Qb, F, sc.KsT + J0, CP, sI, F, kSub, T(1), false);
          const T* AJ = sc.A + size_t(J0 + kSub - 1) * F;
          T* Bv = sc.Bv;
#pragma omp simd
          for (int f = 0; f < F; ++f) Bv[f] *= AJ[f];
        }
      }
      // Y = P V' in blocks of 4 rows (the columns up to the block's end), den = row sums of P.
      for (int i0 = 0; i0 < n; i0 += 4) {
        const int m = std::min(4, n - i0), cols = i0 + m;
        matmul(sc.Y + size_t(i0) * E, E, P + size_t(i0) * Cc, Cc, sc.Vp, EP, m, cols, Dh, T(1), false);
      }
      for (int i = 0; i < n; ++i) {
        T den = 0;
        for (int j = 0; j <= i; ++j) den += P[size_t(i) * Cc + j];
        sc.Y[size_t(i) * E + Dh] = den;
      }
      if (!state_zero) {  // Y += (Q̂ ⊙ eG) S_prev
        for (size_t x = 0; x < size_t(n) * F; ++x) sc.Qe[x] = sc.eG[x] * phiq[x];
        matmul(sc.Y, E, sc.Qe, F, sc.S, EP, n, F, E, T(1), true);
      }
      for (int i = 0; i < n; ++i) {
        const T* Yi = sc.Y + size_t(i) * E;
        const T den = Yi[Dh];  // out = num / max(den, eps_d)
        if (saved) saved[L.den + bht0 + i] = den;
        const T inv = T(1) / (den > eps_d ? den : eps_d);
        T* o = out + (static_cast<size_t>(b) * Tn + t0 + i) * C + static_cast<size_t>(h) * Dh;
#pragma omp simd
        for (int e = 0; e < Dh; ++e) o[e] = Yi[e] * inv;
      }

      // S_next = diag(eG_{n-1}) S_prev + (K̃ ⊙ w)ᵀ V'; skipped after the last chunk unless asked for.
      if (ci + 1 < L.n_chunks || state_out) {
        const T* decay = sc.eG + size_t(n - 1) * F;
        for (int f = 0; f < F; ++f)
          for (int j = 0; j < n; ++j) sc.KwT[f * CP + j] = sc.Kt[size_t(j) * F + f] * sc.w[size_t(j) * F + f];
        if (!state_zero)
          for (int f = 0; f < F; ++f)
            for (int e = 0; e < E; ++e) sc.S[f * EP + e] *= decay[f];
        matmul(sc.S, EP, sc.KwT, CP, sc.Vp, EP, F, n, E, T(1), !state_zero);
        state_zero = false;
      }
    }
    if (state_out) {
      for (int f = 0; f < F; ++f) {
        if (state_zero) std::fill_n(state_out + bh * FE + size_t(f) * E, E, T(0));
        else std::copy_n(sc.S + f * EP, E, state_out + bh * FE + size_t(f) * E);
      }
    }
  });
}

#define RFA_INSTANTIATE(T)                                                                                       \
  template void rfa_feature_forward<T>(T*, T*, Workspace<T>, const RfaInputs<T>&, const RfaParams<T>&,          \
                                       const RfaConfig&, const AttentionDims&, const T*, T*);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
