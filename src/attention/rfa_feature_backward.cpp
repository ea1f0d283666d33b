// RFA-Gate with the feature gate, chunked backward (docs/rfa-attention.md section 5): a
// reverse pass over chunks carrying dS, from the forward's saved features, chunk-entry
// states, scores P and gate pre-activations. Per chunk (notation of rfa_feature_forward.cpp):
//   dP = dY V'ᵀ (lower)
//   dq̂_i = sum_{j<=i} dP_ij k̃_j ⊙ exp(G_i - G_j) + eG_i ⊙ (S_prev dy_i)
//   dk̃_j = sum_{i>=j} dP_ij q̂_i ⊙ exp(G_i - G_j) + w_j ⊙ (dS v'_j)
//   dv'_j = sum_{i>=j} P_ij dy_i + dSᵀ (k̃_j ⊙ w_j)
//   dS_prev = diag(eG_{n-1}) dS + (Q̂ ⊙ eG)ᵀ dY
// (the sums over j != i's sub-chunk as products with the factors of rfa_feature_gate.h).
// The log-gates enter only through G_t - G_s paired with q̂_t ⊙ k̃_s (and eG_t ⊙ q̂_t), so
// per feature dG_t = q̂_t ⊙ dq̂_t - k̃_t ⊙ dk̃_t and dlambda_r = sum_{t>=r} dG_t, then
//   da = beta ⊙ dlambda - g ⊙ k̃ ⊙ dk̃,  dphi(k) = delta beta ⊙ dk̃,
// and a = gate_w n + gate_b gives dn = da gate_w, dgate_w += daᵀ n, dgate_b += sum da (gemms).
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
namespace {

// dst[i, :] += s1[i, :] ⊙ s2 ⊙ x[i, :] for n rows of F (s2 a vector, or null = ones).
template <typename T>
void add_scaled(T* dst, const T* s1, const T* s2, const T* x, int n, int F) {
  for (int i = 0; i < n; ++i) {
    T* di = dst + size_t(i) * F;
    const T* ai = s1 + size_t(i) * F;
    const T* xi = x + size_t(i) * F;
    if (s2) {
#pragma omp simd
      for (int f = 0; f < F; ++f) di[f] += ai[f] * s2[f] * xi[f];
    } else {
#pragma omp simd
      for (int f = 0; f < F; ++f) di[f] += ai[f] * xi[f];
    }
  }
}

}  // namespace

template <typename T>
void rfa_feature_backward(const RfaInputGrads<T>& grads, const RfaParamGrads<T>& pgrads, Workspace<T> workspace,
                          const T* dout, const T* out, const T* saved, const RfaInputs<T>& in,
                          const RfaParams<T>& p, const RfaConfig& c, const AttentionDims& d) {
  const RfaSavedLayout L = rfa_saved_layout(c, d);
  const RfaScratchDims sd = rfa_scratch_dims(c, d);
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C(), D = c.num_features, F = L.F, E = L.E, Cc = int(sd.Cc);
  const size_t FP = sd.FP, EP = sd.EP, CP = sd.CP, HF = size_t(H) * F, FE = size_t(F) * E;
  const int threads = thread_count();
  RFA_ASSERT(workspace.size >= rfa_workspace_size(c, d, threads), "rfa workspace {} < {}", workspace.size,
             rfa_workspace_size(c, d, threads));
  RFA_ASSERT(in.n && p.gate_w && pgrads.dgate_w && pgrads.dgate_b, "the feature gate needs n and gate grads");
  RfaBackwardShared<T> shared;
  const size_t shared_size = shared.carve(workspace.data, c, d, threads);
  T* da = shared.da;  // (B, T, H, F)
  const T* gate_a = saved + L.gate_a;
  const T eps_d = T(c.eps_d);
  constexpr int kSub = kFeatureGateSub;

  attention_tasks_run(int64_t(d.B) * H, workspace.data + shared_size, rfa_thread_scratch_size(c, d), threads,
                      [&](int64_t bh, T* scratch) {
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H);
    RfaFeatureBackwardScratch<T> s;
    s.carve(scratch, sd);
    feature_map_pack_backward(s.Wp, p.W + static_cast<size_t>(h) * D * Dh, D, Dh);
    const T* sigma = p.sigma + static_cast<size_t>(h) * Dh;
    T* dsigma = shared.dsigma_parts + static_cast<size_t>(bh) * Dh;
    std::fill(dsigma, dsigma + Dh, T(0));
    std::fill(s.dlam, s.dlam + F, T(0));
    bool dS_zero = true;

    for (int ci = L.n_chunks - 1; ci >= 0; --ci) {
      const int t0 = ci * Cc, n = std::min(Cc, Tn - t0);
      const size_t bht0 = static_cast<size_t>(bh) * Tn + t0;
      const T* phiq = saved + L.phi_q + bht0 * F;
      const T* phik = saved + L.phi_k + bht0 * F;
      const T* S_prev = saved + L.states + (static_cast<size_t>(bh) * L.n_chunks + ci) * FE;
      const T* P = saved + L.P + (static_cast<size_t>(bh) * L.n_chunks + ci) * Cc * Cc;
      auto row_of = [&](int i) { return (static_cast<size_t>(b) * Tn + t0 + i) * C + static_cast<size_t>(h) * Dh; };
      auto a_row = [&](int i) { return (static_cast<size_t>(b) * Tn + t0 + i) * HF + size_t(h) * F; };

      // The chunk's saved rows (gate pre-activations, features) are long out of cache since the
      // forward: request them first, and let the dY rows below hide the latency.
      for (int i = 0; i < n; ++i)
        for (int f = 0; f < F; f += 64 / int(sizeof(T))) {
          __builtin_prefetch(gate_a + a_row(i) + f);
          __builtin_prefetch(phik + size_t(i) * F + f);
          __builtin_prefetch(phiq + size_t(i) * F + f);
        }
      // dY from dout through the floor; v'.
      for (int i = 0; i < n; ++i) {
        std::copy_n(in.v + row_of(i), Dh, s.Vp + size_t(i) * E);
        s.Vp[size_t(i) * E + Dh] = T(1);
        // out = num / max(den, eps_d): above the floor dnum = dh/den, dden = -(dh·out)/den; on it dden = 0.
        const T den = saved[L.den + bht0 + i];
        const T* dh = dout + row_of(i);
        T* dYi = s.dY + i * EP;
        const bool above = den > eps_d;
        const T inv = T(1) / (above ? den : eps_d);
#pragma omp simd
        for (int e = 0; e < Dh; ++e) dYi[e] = dh[e] * inv;
        dYi[Dh] = above ? -dot(dh, out + row_of(i), Dh) * inv : T(0);
      }
      // Gates and k̃ recomputed.
      feature_gate_rows(s.rows(), gate_a + a_row(0), HF, n, F);
      for (int i = 0; i < n; ++i) {
        const T delta = s.kscale[i] = rfa_discount<T>(c, in.pos0 + t0 + i);
        const size_t iF = size_t(i) * F;
        const T *beta = s.beta + iF, *pk = phik + iF, *pq = phiq + iF, *A = s.A + iF, *Ks = s.Ks + iF;
        T *Kt = s.Kt + i * FP, *KK = s.KK + i * FP, *Qp = s.Qp + i * FP, *QA = s.QA + i * FP;
#pragma omp simd
        for (int f = 0; f < F; ++f) {
          Kt[f] = delta * beta[f] * pk[f];
          KK[f] = Kt[f] * Ks[f];
          Qp[f] = pq[f];
          QA[f] = pq[f] * A[f];
        }
      }
      for (int j = 0; j < n; ++j)
        for (int e = 0; e < E; ++e) s.VpT[e * CP + j] = s.Vp[size_t(j) * E + e];

      // dP = dY V'ᵀ on and below the diagonal (4-row blocks); transposes Pᵀ, dPᵀ (0 below the
      // diagonal inside a block, which the dV product reads).
      for (int i0 = 0; i0 < n; i0 += 4) {
        const int m = std::min(4, n - i0), cols = i0 + m;
        matmul(s.dP + size_t(i0) * Cc, Cc, s.dY + i0 * EP, EP, s.VpT, CP, m, E, cols, T(1), false);
      }
      for (int j = 0; j < n; ++j) {
        T* PTj = s.PT + size_t(j) * Cc;
        T* dPTj = s.dPT + size_t(j) * Cc;
        for (int i = j / 4 * 4; i < j; ++i) PTj[i] = T(0), dPTj[i] = T(0);
        for (int i = j; i < n; ++i) PTj[i] = P[size_t(i) * Cc + j], dPTj[i] = s.dP[size_t(i) * Cc + j];
      }
      // dv'_j = sum_{i>=j} P_ij dy_i (first Dh columns: the last entry of v' is the constant 1)
      for (int i0 = 0; i0 < n; i0 += 4) {
        const int m = std::min(4, n - i0);
        matmul(s.dV + size_t(i0) * E, E, s.PT + size_t(i0) * Cc + i0, Cc, s.dY + i0 * EP, EP, m, n - i0, Dh, T(1),
               false);
      }

      // Intra-chunk dq̂, dk̃: diagonal blocks directly, earlier sub-chunks as products.
      std::fill_n(s.dQ, size_t(n) * F, T(0));
      std::fill_n(s.dK, size_t(n) * F, T(0));
      for (int I0 = 0; I0 < n; I0 += kSub) {
        const int sI = std::min(kSub, n - I0);
        for (int i = I0; i < I0 + sI; ++i)
          feature_gate_diag_grads(s.dQ + size_t(i) * F, s.dK, F, s.dP + size_t(i) * Cc, s.Qp + i * FP, s.Kt, FP, s.g,
                                  F, i, I0, F);
        // dq̂_I += A_I ⊙ B_IJ ⊙ (dP_IJ KK_J);  dk̃_J += Ks_J ⊙ B_IJ ⊙ (dP_IJᵀ QA_I)
        std::fill_n(s.Bv, F, T(1));
        for (int J0 = I0 - kSub; J0 >= 0; J0 -= kSub) {
          matmul(s.X, F, s.dP + size_t(I0) * Cc + J0, Cc, s.KK + J0 * FP, FP, sI, kSub, F, T(1), false);
          add_scaled(s.dQ + size_t(I0) * F, s.A + size_t(I0) * F, s.Bv, s.X, sI, F);
          matmul(s.X, F, s.dPT + size_t(J0) * Cc + I0, Cc, s.QA + I0 * FP, FP, kSub, sI, F, T(1), false);
          add_scaled(s.dK + size_t(J0) * F, s.Ks + size_t(J0) * F, s.Bv, s.X, kSub, F);
          const T* AJ = s.A + size_t(J0 + kSub - 1) * F;
          T* Bv = s.Bv;
#pragma omp simd
          for (int f = 0; f < F; ++f) Bv[f] *= AJ[f];
        }
      }

      // Y_i += (q̂_i ⊙ eG_i)ᵀ S_prev:  dq̂_i += eG_i ⊙ (S_prev dy_i)  (when the chunk entered with a state)
      if (ci > 0 || saved[L.state_flags + bh] != T(0)) {
        for (int f = 0; f < F; ++f)
          for (int e = 0; e < E; ++e) s.SpT[e * FP + f] = S_prev[size_t(f) * E + e];
        matmul(s.X, F, s.dY, EP, s.SpT, FP, n, E, F, T(1), false);
        add_scaled(s.dQ, s.eG, static_cast<const T*>(nullptr), s.X, n, F);
      }
      // S_next += (k̃_j ⊙ w_j) v'_jᵀ:  dk̃_j += w_j ⊙ (dS v'_j),  dv'_j += dSᵀ (k̃_j ⊙ w_j)
      if (!dS_zero) {
        for (int f = 0; f < F; ++f)
          for (int e = 0; e < E; ++e) s.dST[e * FP + f] = s.dS[f * EP + e];
        matmul(s.X, F, s.Vp, E, s.dST, FP, n, E, F, T(1), false);
        add_scaled(s.dK, s.w, static_cast<const T*>(nullptr), s.X, n, F);
        for (int j = 0; j < n; ++j)
          for (int f = 0; f < F; ++f) s.KK[j * FP + f] = s.Kt[j * FP + f] * s.w[size_t(j) * F + f];
        matmul(s.dV, E, s.KK, FP, s.dS, EP, n, F, Dh, T(1), true);
      }
      // dS_prev = diag(eG_{n-1}) dS + (Q̂ ⊙ eG)ᵀ dY; not needed before the first chunk.
      if (ci > 0) {
        const T* decay = s.eG + size_t(n - 1) * F;
        for (int i = 0; i < n; ++i)
          for (int f = 0; f < F; ++f) s.QeT[size_t(f) * Cc + i] = s.Qp[i * FP + f] * s.eG[size_t(i) * F + f];
        if (!dS_zero)
          for (int f = 0; f < F; ++f)
            for (int e = 0; e < E; ++e) s.dS[f * EP + e] *= decay[f];
        matmul(s.dS, EP, s.QeT, Cc, s.dY, EP, F, n, E, T(1), !dS_zero);
        dS_zero = false;
      }

      // Per token, last to first: dlambda, da = beta ⊙ dlambda - g ⊙ k̃ ⊙ dk̃, dphi(k) = delta beta ⊙ dk̃.
      for (int i = n - 1; i >= 0; --i) {
        const size_t iF = size_t(i) * F;
        const T* qi = s.Qp + i * FP;
        const T* ki = s.Kt + i * FP;
        const T* dqi = s.dQ + iF;
        const T* g = s.g + iF;
        const T* beta = s.beta + iF;
        T* dki = s.dK + iF;
        T* dlam = s.dlam;
        T* dai = da + a_row(i);
        const T kscale = s.kscale[i];
#pragma omp simd
        for (int f = 0; f < F; ++f) {
          const T k_dk = ki[f] * dki[f];
          dlam[f] += qi[f] * dqi[f] - k_dk;
          dai[f] = beta[f] * dlam[f] - g[f] * k_dk;
          dki[f] *= kscale * beta[f];
        }
      }

      // Feature maps (as products), then per token: sigma, normalisation, values.
      feature_map_backward_rows(s.Wq, s.DU, s.dQ, phiq, s.Wp, c.feature_map, n, D, Dh);
      feature_map_backward_rows(s.Wq + size_t(Cc) * Dh, s.DU, s.dK, phik, s.Wp, c.feature_map, n, D, Dh);
      for (int i = 0; i < n; ++i) {
        const size_t row = row_of(i);
        T* dv = grads.dv + row;
        const T* dVi = s.dV + size_t(i) * E;
#pragma omp simd
        for (int e = 0; e < Dh; ++e) dv[e] = dVi[e];
        for (int side = 0; side < 2; ++side) {
          // u = W (sigma ⊙ x̄), x̄ = r x:  dx̄ = sigma ⊙ w, dsigma += x̄ ⊙ w, then the normalisation.
          const T r = saved[(side ? L.r_k : L.r_q) + bht0 + i];
          const T* x = (side ? in.k : in.q) + row;
          const T* w = s.Wq + (size_t(side) * Cc + i) * Dh;
          T* xbar = s.xbar;
          T* dxbar = s.dxbar;
#pragma omp simd
          for (int e = 0; e < Dh; ++e) {
            xbar[e] = x[e] * r;
            dxbar[e] = sigma[e] * w[e];
            dsigma[e] += xbar[e] * w[e];
          }
          l2_normalize_backward((side ? grads.dk : grads.dq) + row, dxbar, xbar, r, Dh);
        }
      }
    }
  });

  // a = n gate_wᵀ + gate_b:  dn = da gate_w (overwrites), dgate_w += daᵀ n, dgate_b += column sums of da.
  const int64_t BT = int64_t(d.B) * Tn;
  rfa_gate_param_grads(grads.dn, pgrads.dgate_w, pgrads.dgate_b, da, in.n, p.gate_w, BT, int(HF), C);
  // dsigma[h] += sum_b partials
  for (int h = 0; h < H; ++h)
    for (int b = 0; b < d.B; ++b)
      axpy(pgrads.dsigma + static_cast<size_t>(h) * Dh, T(1),
           shared.dsigma_parts + (static_cast<size_t>(b) * H + h) * Dh, Dh);
}

#define RFA_INSTANTIATE(T)                                                                                     \
  template void rfa_feature_backward<T>(const RfaInputGrads<T>&, const RfaParamGrads<T>&, Workspace<T>,      \
                                        const T*, const T*, const T*, const RfaInputs<T>&,                     \
                                        const RfaParams<T>&, const RfaConfig&, const AttentionDims&);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
