#pragma once
// Internal to rfa_chunked_backward.cpp: one (b, h) task of RFA's chunked backward, its steps as
// methods in the order they run (the driver, over tasks and chunks, is in the .cpp).
//
// RFA chunked backward, docs/rfa-attention.md sections 4 and 5, for both gates: a reverse
// pass over chunks carrying dS (the gradient of the state leaving the chunk), with the
// chunk-entry states, features and scores P the forward saved. Per chunk (notation of
// rfa_chunked_forward.cpp; eG, w and the decay per row, or per (row, feature) with the
// feature gate):
//   Y = P V' + (Q̂ ⊙ eG) S_prev,  S_next = e^{G_n} ⊙ S_prev + (K̃ ⊙ w)ᵀ V'
//   dP = dY V'ᵀ (lower)
//   scalar gate:  P = (Q̂ K̃ᵀ) ⊙ M,  dA = dP ⊙ M,  dQ̂ = dA K̃,  dK̃ = dAᵀ Q̂
//   feature gate: dq̂_i = sum_{j<=i} dP_ij k̃_j ⊙ e^{G_i - G_j},  dk̃_j = sum_{i>=j} dP_ij q̂_i ⊙ e^{G_i - G_j}
//                 (as products over sub-chunks: rfa_feature_gate.h)
//   dQ̂ += eG ⊙ (dY S_prevᵀ),   dK̃ += w ⊙ (V' dSᵀ)
//   dV' = Pᵀ dY + (K̃ ⊙ w) dS
//   dS_prev = e^{G_n} ⊙ dS + (Q̂ ⊙ eG)ᵀ dY
// The log-gates enter only through differences G_t - G_s paired with q̂_t ⊙ k̃_s (and
// e^{G_t} q̂_t), so dG_t = q̂_t ⊙ dq̂_t - k̃_t ⊙ dk̃_t with the full dq̂, dk̃ (summed over the
// features for the scalar gate), and dlambda_r = sum_{t>=r} dG_t: a running sum in this
// reverse pass. Then
//   da = beta ⊙ dlambda - g ⊙ (dk̃ ⊙ k̃),  dphi(k) = delta beta ⊙ dk̃, and the feature maps' backward,
// and a = gate_w n + gate_b gives dn = da gate_w, dgate_w += daᵀ n, dgate_b += sum da (gemms).
// Document boundaries: the forward's g = 0 at a document's first row s is a constant there, so
// da_s = -sigmoid(a_s) ⊙ (dk̃_s ⊙ k̃_s) (beta's part only), and dlambda restarts at 0 before s:
// for r < s, sum_{t>=s} dG_t = 0 (every pair across s is masked), so dlambda_r = sum_{r<=t<s} dG_t.

#include <algorithm>
#include <cmath>

#include "attention/attention_tasks.h"
#include "attention/causal_matmul.h"
#include "attention/feature_map.h"
#include "attention/rfa_chunk_at.h"
#include "attention/rfa_attention.h"
#include "attention/rfa_feature_gate.h"
#include "attention/rfa_gate_products.h"
#include "attention/rfa_layout.h"
#include "attention/rfa_scratch.h"
#include "kernels/transpose.h"
#include "kernels/vector_math.h"
#include "core/error.h"

namespace rfa {


template <typename T>
bool all_zero(const T* x, size_t n) {
  bool nonzero = false;  // no early exit: the loop vectorises
  for (size_t i = 0; i < n; ++i) nonzero |= x[i] != T(0);
  return !nonzero;
}

// One (b, h) of the backward, chunk by chunk in reverse; each step below is one group of
// the formulas at the top of this file, in the order they run. kFeature: the feature gate
// (gate values (n, F)); else the scalar gate or none (n).
template <typename T, bool kFeature>
struct RfaHeadBackward : RfaChunkAt<T, kFeature> {
  using At = RfaChunkAt<T, kFeature>;
  using At::c, At::d, At::L, At::sd, At::b, At::h, At::bh, At::ci, At::t0, At::n, At::bht0, At::chunk_at, At::row_of,
      At::task_row, At::gate_at, At::gate_row, At::reset, At::reset_inner, At::position;
  // The problem (and in the base: the sizes, this (b, h), the chunk).
  const RfaInputGrads<T>& grads;
  const RfaInputs<T>& in;
  const T* dout;   // (B, T, C)
  const T* out;    // (B, T, C)
  const T* saved;
  T* da;           // (B, T, H, W)
  // This (b, h)'s parameters, gradients and scratch.
  const T* sigma;  // (Dh)
  T* dsigma;       // (Dh) this head's partial
  const RfaBackwardScratch<T>& s;
  bool dS_zero = true;  // dS is all zeros (the state after the last token gets no gradient)
  T dlambda = 0;        // scalar gate: running sum_{t >= r} dG_t (the feature gate's is s.dlam)
  // The chunk's buffers.
  const T* phiq = nullptr;    // (c, F) saved
  const T* phik = nullptr;    // (c, F) saved
  const T* S_prev = nullptr;  // (F, E) saved chunk-entry state
  const T* P = nullptr;       // (c, c) saved scores
  const T* Qp = nullptr;      // (c, FP) q̂: the saved rows themselves when F is a whole number of
                              // registers (FP == F), else s.Qp, a copy padded to FP

  void chunk_enter(int chunk) {
    const int Cc = int(sd.Cc);
    const size_t FE = static_cast<size_t>(L.F) * L.E;
    chunk_at(chunk, in);
    phiq = saved + L.phi_q + bht0 * L.F;
    phik = saved + L.phi_k + bht0 * L.F;
    S_prev = saved + L.states + (static_cast<size_t>(bh) * L.n_chunks + ci) * FE;
    P = saved + L.P + (static_cast<size_t>(bh) * L.n_chunks + ci) * Cc * Cc;
  }

  // Gates, k̃, v' recomputed; dY from dout through the floor.
  void chunk_recompute() {
    const int Dh = d.Dh, F = L.F, E = L.E;
    const size_t FP = sd.FP, EP = sd.EP, CP = sd.CP;
    const T eps_d = T(c.eps_d);
    // The chunk before this one (the next to run), or after the first chunk the next task's last
    // (b, h + 1, or b + 1 and head 0), reads its dout, out, q, k and v rows and writes its dq, dk
    // and dv rows, a head's Dh columns of rows C apart (a stride the hardware prefetcher does not
    // follow across pages): request them into L2 now (they were the hottest misses).
    const int64_t next_bh = ci > 0 ? bh : bh + 1;
    if (next_bh < int64_t(d.B) * d.H) {
      const int Cc = int(sd.Cc);
      const int next_t0 = ci > 0 ? t0 - Cc : (L.n_chunks - 1) * Cc, next_n = std::min(Cc, d.T - next_t0);
      for (int i = 0; i < next_n; ++i)
        for (int e = 0; e < Dh; e += 64 / int(sizeof(T))) {
          const size_t row = task_row(next_bh, next_t0 + i) + e;
          for (const T* x : {dout, out, in.q, in.k, in.v}) __builtin_prefetch(x + row, 0, 2);
          for (T* x : {grads.dq, grads.dk, grads.dv}) __builtin_prefetch(x + row, 1, 2);
        }
      // and its saved features and scores (written by the forward, long out of cache).
      const size_t next_bht0 = size_t(next_bh) * d.T + next_t0, next_ci = size_t(next_t0 / Cc);
      const T* saved_rows[] = {saved + L.phi_q + next_bht0 * L.F, saved + L.phi_k + next_bht0 * L.F,
                               saved + L.P + (size_t(next_bh) * L.n_chunks + next_ci) * Cc * Cc};
      const size_t saved_sizes[] = {size_t(next_n) * L.F, size_t(next_n) * L.F, size_t(Cc) * Cc};
      for (int a = 0; a < 3; ++a)
        for (size_t x = 0; x < saved_sizes[a]; x += 64 / sizeof(T)) __builtin_prefetch(saved_rows[a] + x, 0, 2);
    }
    if constexpr (kFeature) {
      // So are the saved gate pre-activations and features (they were the hottest loads).
      for (int i = 0; i < n; ++i)
        for (int f = 0; f < F; f += 64 / int(sizeof(T))) {
          __builtin_prefetch(saved + L.gate_a + gate_row(i) + f);
          __builtin_prefetch(phik + size_t(i) * F + f);
          __builtin_prefetch(phiq + size_t(i) * F + f);
        }
      feature_gate_rows(FeatureGateRows<T>{s.g, s.beta, s.eG, s.w, s.A, s.Ks}, saved + L.gate_a + gate_row(0),
                        size_t(d.H) * F, n, F, reset);
    } else {
      if (c.gated)  // the forward's gate pre-activations, (B, T, H)
        for (int i = 0; i < n; ++i) s.arow[i] = saved[L.gate_a + gate_row(i)];
      gate_rows(s.g, s.beta, s.eG, c.gated ? s.arow : nullptr, n);
      if (reset) gate_rows_reset(s.g, s.eG, reset, n);
      gate_suffix(s.w, s.g, n);
    }
    Qp = FP == size_t(F) ? phiq : s.Qp;
    for (int i = 0; i < n; ++i) {
      if (FP != size_t(F)) copy_row(s.Qp + i * FP, phiq + size_t(i) * F, F);
      copy_row(s.Vp + size_t(i) * E, in.v + row_of(i), Dh);
      s.Vp[size_t(i) * E + Dh] = T(1);
      // out = num / max(den, eps_d): above the floor dnum = dh/den, dden = -(dh·out)/den;
      // on the floor dnum = dh/eps_d and dden = 0 (the floor is a constant there).
      const T den = saved[L.den + bht0 + i];
      const T* dh = dout + row_of(i);
      T* dYi = s.dY + i * EP;
      const bool above = den > eps_d;
      const T inv = T(1) / (above ? den : eps_d);
      RFA_OMP_SIMD_FULL  // (no overlap; see the per-token loop of input_grads)
      for (int e = 0; e < Dh; ++e) dYi[e] = dh[e] * inv;
      dYi[Dh] = above ? -dot(dh, out + row_of(i), Dh) * inv : T(0);
    }
    for (int j = 0; j < n; ++j) {
      const T delta = rfa_discount<T>(c, position(in, j));
      T* Kt = s.Kt + j * FP;
      const T* pk = phik + size_t(j) * F;
      if constexpr (kFeature) {
        // k̃ = delta beta ⊙ phi(k), kscale = delta; KK = K̃ ⊙ Ks, QA = Q̂ ⊙ A (the sub-chunk products).
        s.kscale[j] = delta;
        const size_t jF = size_t(j) * F;
        const T *beta = s.beta + jF, *Ks = s.Ks + jF, *A = s.A + jF, *q = Qp + j * FP;
        T *KK = s.KK + j * FP, *QA = s.QA + j * FP;
        RFA_OMP_SIMD_FULL
        for (int f = 0; f < F; ++f) {
          Kt[f] = delta * beta[f] * pk[f];
          KK[f] = Kt[f] * Ks[f];
          QA[f] = q[f] * A[f];
        }
      } else {
        // k̃ = delta beta phi(k); kscale = delta beta (= beta without the time discount)
        const T ks = s.kscale[j] = c.time_discount ? s.beta[j] * delta : s.beta[j];
        RFA_OMP_SIMD_FULL
        for (int f = 0; f < F; ++f) Kt[f] = ks * pk[f];
      }
    }
    transpose(s.VpT, CP, s.Vp, size_t(E), n, E);
  }

  // dP = dY V'ᵀ (Y_i = sum_j P_ij v'_j, P saved by the forward) over the row tiles' blocks left
  // of the diagonal (as the forward's P), 0 right of the diagonal; the scalar gate's dA = dP ⊙ M.
  void chunk_score_grads() {
    const int Cc = int(sd.Cc), E = L.E;
    const size_t EP = sd.EP, CP = sd.CP;
    matmul_lower_c(s.dA, Cc, s.dY, EP, s.VpT, CP, n, E, n, T(1), false);
    for (int i = 0; i < n; ++i) {
      T* dAi = s.dA + size_t(i) * Cc;
      if (!kFeature && (c.gated || reset_inner)) {
        // M_ij = exp(G_i - G_j) = prod_{r=j+1..i} g_r = M_{i-1,j} g_i: no exp, no overflow.
        T* Mi = s.M + size_t(i) * Cc;
        const T* Mprev = s.M + size_t(i - 1) * Cc;
        const T gi = s.g[i];
        RFA_OMP_SIMD_FULL  // (dA_ii M_ii = dA_ii: M_ii = 1)
        for (int j = 0; j < i; ++j) {
          Mi[j] = Mprev[j] * gi;
          dAi[j] *= Mi[j];
        }
        Mi[i] = T(1);
      }
      zero_row(dAi + i + 1, n - i - 1);
    }
  }

  // Intra-chunk: dv'_j = sum_{i>=j} P_ij dy_i (P read by columns: matmul_at, no transposed
  // copy), and dq̂, dk̃: the scalar gate's dq̂_i = sum_{j<=i} dA_ij k̃_j, dk̃_j = sum_{i>=j} dA_ij q̂_i,
  // each one product over the chunk's causal blocks (causal_matmul.h: a row tile reads the keys
  // up to its last row, or the queries from its first, the zeros of P and dA elsewhere); the
  // feature gate's as sub-chunk products and diagonal blocks.
  void chunk_intra_grads() {
    const int Cc = int(sd.Cc), Dh = d.Dh, F = L.F, E = L.E;
    const size_t FP = sd.FP, EP = sd.EP;
    if constexpr (kFeature)
      feature_gate_score_grads(s.dQ, s.dK, s.dA, Cc, Qp, s.Kt, s.QA, s.KK, FP, s.g, s.A, s.Ks, s.tmp, s.Bv, n, F);
    else
      matmul_lower_a(s.dQ, F, s.dA, Cc, s.Kt, FP, n, n, F, T(1), false);
    // (only dv's first Dh columns are needed: the last entry of v' is the constant 1)
    matmul_at_upper(s.dV, E, P, Cc, s.dY, EP, n, n, Dh, T(1), false);
    if constexpr (!kFeature) matmul_at_upper(s.dK, F, s.dA, Cc, Qp, FP, n, n, F, T(1), false);
  }

  // Y_i += (q̂_i ⊙ eG_i)ᵀ S_prev:  dq̂_i += eG_i ⊙ (S_prev dy_i) (when the chunk entered with a state).
  void chunk_state_in_grads() {
    const int F = L.F, E = L.E;
    const size_t FP = sd.FP, EP = sd.EP, FE = static_cast<size_t>(F) * E;
    // After the first chunk there is always a state (and a product with zeros adds zeros);
    // an entering state given to the first chunk may be all zeros (stateful training's first step).
    if (!(ci > 0 || (saved[L.state_flags + bh] != T(0) && !all_zero(S_prev, FE)))) return;
    transpose(s.SpT, FP, S_prev, size_t(E), F, E);
    if constexpr (kFeature) {  // the product first, then each feature's eG
      matmul(s.tmp, F, s.dY, EP, s.SpT, FP, n, E, F, T(1), false);
      feature_gate_add_scaled(s.dQ, s.eG, F, static_cast<const T*>(nullptr), s.tmp, n, F);
    } else {  // eG_i scales the row dy_i
      for (int i = 0; i < n; ++i) {
        const T eGi = s.eG[i];
        const T* dYi = s.dY + i * EP;
        T* t = s.tmp + i * EP;
        RFA_OMP_SIMD_FULL
        for (int e = 0; e < E; ++e) t[e] = eGi * dYi[e];
      }
      matmul(s.dQ, F, s.tmp, EP, s.SpT, FP, n, E, F, T(1), true);
    }
  }

  // S_next += (k̃_j ⊙ w_j) v'_jᵀ:  dk̃_j += w_j ⊙ (dS v'_j),  dv'_j += dSᵀ (k̃_j ⊙ w_j)
  void chunk_state_out_grads() {
    if (dS_zero) return;
    const int Dh = d.Dh, F = L.F, E = L.E;
    const size_t FP = sd.FP, EP = sd.EP;
    transpose(s.dST, FP, s.dS, EP, F, E);
    if constexpr (kFeature) {  // the product first, then each feature's w
      matmul(s.tmp, F, s.Vp, E, s.dST, FP, n, E, F, T(1), false);
      feature_gate_add_scaled(s.dK, s.w, F, static_cast<const T*>(nullptr), s.tmp, n, F);
    } else {  // w_j scales the row v'_j
      for (int j = 0; j < n; ++j) {
        const T wj = s.w[j];
        const T* v = s.Vp + size_t(j) * E;
        T* t = s.tmp + j * EP;
        RFA_OMP_SIMD_FULL
        for (int e = 0; e < E; ++e) t[e] = wj * v[e];
      }
      matmul(s.dK, F, s.tmp, EP, s.dST, FP, n, E, F, T(1), true);
    }
    for (int j = 0; j < n; ++j) {
      const T* w = s.w + (kFeature ? size_t(j) * F : size_t(j));
      const T* Kt = s.Kt + j * FP;
      T* t = s.tmp + j * FP;
      RFA_OMP_SIMD_FULL
      for (int f = 0; f < F; ++f) t[f] = w[kFeature ? f : 0] * Kt[f];
    }
    matmul(s.dV, E, s.tmp, FP, s.dS, EP, n, F, Dh, T(1), true);
  }

  // dS_prev = e^{G_n} ⊙ dS + (Q̂ ⊙ eG)ᵀ dY; not needed before the first chunk (the entering state is a constant).
  void chunk_carry_state_grad() {
    if (ci == 0) return;
    const int F = L.F, Dh = d.Dh;
    const size_t FP = sd.FP, EP = sd.EP;
    T* Qe = s.Qe;  // (c, F) Q̂ ⊙ eG, read transposed by matmul_at
    T* dz = s.dz;  // (F) the normaliser column's new part, sum_i (q̂_i ⊙ eG_i) dden_i
    std::fill_n(dz, F, T(0));
    for (int i = 0; i < n; ++i) {
      const T* eG = s.eG + (kFeature ? size_t(i) * F : size_t(i));
      const T* q = Qp + i * FP;
      const T dden = s.dY[i * EP + Dh];
      T* Qei = Qe + size_t(i) * F;
      RFA_OMP_SIMD_FULL
      for (int f = 0; f < F; ++f) {
        Qei[f] = q[f] * eG[kFeature ? f : 0];
        dz[f] += Qei[f] * dden;
      }
    }
    if (!dS_zero)
      for (int f = 0; f < F; ++f) {
        const T decay = gate_at(s.eG, n - 1, f);
        RFA_OMP_SIMD_FULL
        for (size_t x = 0; x < EP; ++x) s.dS[f * EP + x] *= decay;
      }
    // The products over dy's Dh columns (a register for the last of Dh + 1 would be a fifth of
    // the multiply-adds), the normaliser column from dz.
    matmul_at(s.dS, EP, Qe, F, s.dY, EP, F, n, Dh, T(1), !dS_zero);
    for (int f = 0; f < F; ++f) s.dS[f * EP + Dh] = dS_zero ? dz[f] : s.dS[f * EP + Dh] + dz[f];
    dS_zero = false;
  }

  // Per token, last to first: log-gate and gate (gated only); dphi(k) = kscale (beta) dk̃.
  void chunk_gate_grads() {
    const int F = L.F;
    const size_t FP = sd.FP;
    if constexpr (kFeature) {
      for (int i = n - 1; i >= 0; --i) {
        const size_t iF = size_t(i) * F;
        const T *qi = Qp + i * FP, *ki = s.Kt + i * FP, *dqi = s.dQ + iF, *g = s.g + iF, *beta = s.beta + iF;
        T *dki = s.dK + iF, *dlam = s.dlam, *dai = da + gate_row(i);
        const T kscale = s.kscale[i];
        if (reset && reset[i]) {
          // A document's first row: its decay is the constant 0 (g is 0 in s.g), so a reaches k̃
          // through beta only, da = -sigmoid(a) ⊙ k̃ ⊙ dk̃; and no later row depends on the
          // log-gates before it (their sum over the later rows is 0): the running sum restarts.
          const T* ai = saved + L.gate_a + gate_row(i);
          for (int f = 0; f < F; ++f) {
            const T k_dk = ki[f] * dki[f];
            dai[f] = -k_dk / (T(1) + std::exp(-ai[f]));
            dlam[f] = T(0);
            dki[f] *= kscale * beta[f];
          }
          continue;
        }
        // lambda = logsigmoid(a), k̃ = delta beta ⊙ phi(k), beta = 1 - sigmoid(a), per feature:
        //   da = beta ⊙ dlambda - g ⊙ k̃ ⊙ dk̃
        RFA_OMP_SIMD_FULL
        for (int f = 0; f < F; ++f) {
          const T k_dk = ki[f] * dki[f];
          dlam[f] += qi[f] * dqi[f] - k_dk;  // dG_t
          dai[f] = beta[f] * dlam[f] - g[f] * k_dk;
          dki[f] *= kscale * beta[f];  // dphi(k) = delta beta ⊙ dk̃
        }
      }
      return;
    }
    if (!c.gated) {
      if (c.time_discount)  // k̃ = delta phi(k)
        for (int i = 0; i < n; ++i)
          for (int f = 0; f < F; ++f) s.dK[size_t(i) * F + f] *= s.kscale[i];
      return;
    }
    for (int i = n - 1; i >= 0; --i) {
      T* dKi = s.dK + size_t(i) * F;
      const T k_dk = dot(s.Kt + i * FP, dKi, F);
      if (reset && reset[i]) {
        // A document's first row: the decay is the constant 0, a reaches k̃ through beta only
        // (da = -sigmoid(a) (dk̃·k̃)), and the running sum restarts (as the feature gate's).
        da[gate_row(i)] = -k_dk / (T(1) + std::exp(-s.arow[i]));
        dlambda = T(0);
      } else {
        dlambda += dot(Qp + i * FP, s.dQ + size_t(i) * F, F) - k_dk;  // dG_t
        // lambda = logsigmoid(a), k̃ = delta beta phi(k), beta = 1 - sigmoid(a):
        //   da = beta dlambda - g (dk̃·k̃)
        da[gate_row(i)] = s.beta[i] * dlambda - s.g[i] * k_dk;
      }
      for (int f = 0; f < F; ++f) dKi[f] *= s.kscale[i];  // dphi(k) = delta beta dk̃
    }
  }

  // Feature maps (as products), then per token: sigma, normalisation, values.
  void chunk_input_grads() {
    const int Cc = int(sd.Cc), Dh = d.Dh, D = c.num_features, E = L.E;
    // The chunk's q and k rows are read only below (x̄ = r x), long out of cache since the forward
    // (the first task of a thread had no task before it to request them): request them now, the
    // feature maps' products hide the latency.
    for (int i = 0; i < n; ++i)
      for (int e = 0; e < Dh; e += 64 / int(sizeof(T))) {
        __builtin_prefetch(in.q + row_of(i) + e);
        __builtin_prefetch(in.k + row_of(i) + e);
      }
    feature_map_backward_rows(s.Wq, s.DU, s.dQ, phiq, s.Wp, c.feature_map, n, D, Dh);
    feature_map_backward_rows(s.Wq + size_t(Cc) * Dh, s.DU, s.dK, phik, s.Wp, c.feature_map, n, D, Dh);
    chunk_dsigma();
    for (int i = 0; i < n; ++i) {
      const size_t row = row_of(i);
      // omp simd: the buffers never overlap, but the compiler cannot prove it through
      // the scratch pointers and would run these loops scalar (~25% of this kernel).
      RFA_OMP_SIMD_FULL
      for (int e = 0; e < Dh; ++e) grads.dv[row + e] = s.dV[size_t(i) * E + e];  // each row once: overwrite
      for (int side = 0; side < 2; ++side) {
        // u = W (sigma ⊙ x̄), x̄ = r x:  dx̄ = sigma ⊙ w (dsigma: chunk_dsigma), then the normalisation.
        const T r = saved[(side ? L.r_k : L.r_q) + bht0 + i];
        const T* x = (side ? in.k : in.q) + row;
        const T* w = s.Wq + (size_t(side) * Cc + i) * Dh;
        T* xbar = s.xbar;
        T* dxbar = s.dxbar;
        RFA_OMP_SIMD_FULL
        for (int e = 0; e < Dh; ++e) {
          xbar[e] = x[e] * r;
          dxbar[e] = sigma[e] * w[e];
        }
        l2_normalize_backward((side ? grads.dk : grads.dq) + row, dxbar, xbar, r, Dh);
      }
    }
  }

  // dsigma += sum over the chunk's rows, q then k of each, of x̄ ⊙ w (x̄ = r x, w the feature
  // maps' Wᵀ du): the sums in registers, a register of columns at a time over all rows, each
  // column's terms added in the same order as a running sum in memory, which chained every row
  // to the last through a store and a load (the largest cost of the rows' loop at nano).
  void chunk_dsigma() {
    using V = typename Simd<T>::V;
    constexpr int W = Simd<T>::W;
    const int Cc = int(sd.Cc), Dh = d.Dh;
    const T *rq = saved + L.r_q + bht0, *rk = saved + L.r_k + bht0;
    const T *wq = s.Wq, *wk = s.Wq + size_t(Cc) * Dh;
    int e = 0;
    for (; e + W <= Dh; e += W) {
      V acc = simd_load(dsigma + e);
      for (int i = 0; i < n; ++i) {
        const size_t row = row_of(i) + e, wi = size_t(i) * Dh + e;
        acc += (simd_load(in.q + row) * rq[i]) * simd_load(wq + wi);
        acc += (simd_load(in.k + row) * rk[i]) * simd_load(wk + wi);
      }
      simd_store(dsigma + e, acc);
    }
    for (; e < Dh; ++e) {
      T acc = dsigma[e];
      for (int i = 0; i < n; ++i) {
        const size_t row = row_of(i) + e, wi = size_t(i) * Dh + e;
        acc += (in.q[row] * rq[i]) * wq[wi];
        acc += (in.k[row] * rk[i]) * wk[wi];
      }
      dsigma[e] = acc;
    }
  }
};

}  // namespace rfa
