#pragma once
// Internal: the feature gate's part of the chunked algorithm (RfaConfig::feature_gate,
// docs/rfa-attention.md section 5): the gate factors of a chunk and the intra-chunk scores
// and their gradients, which rfa_chunked_forward.cpp / rfa_chunked_backward.cpp call where
// the scalar gate has its (Q̂ K̃ᵀ) ⊙ M. Per (b, h), with F features and v' = [v, 1]:
//   a_t = gate_w[h] n_t + gate_b[h]  (F),  g_t = sigmoid(a_t),  beta_t = sigmoid(-a_t)
//   k̃_t = delta(t) beta_t ⊙ phi(k_t),   S_t = diag(g_t) S_{t-1} + k̃_t v'_tᵀ
// Chunked like the scalar gate, with per-feature cumulative log-gates G_i = sum_{r<=i} log g_r
// (chunk-local) and sub-chunks of kSub rows: a score between rows i > j of different
// sub-chunks I > J factors as
//   exp(G_i - G_j) = A_i ⊙ B_IJ ⊙ Ks_j,  A_i = exp(G_i - G_{I0-1}),  B_IJ = exp(G_{I0-1} - G_{J1}),
//   Ks_j = exp(G_{J1} - G_j)      (I0 the first row of I, J1 the last row of J: all exponents <= 0)
// so (Q̂_I ⊙ A_I ⊙ B_IJ)(K̃_J ⊙ Ks_J)ᵀ is a product; inside a sub-chunk each score is a
// dot product with the decay prod_{r=j+1..i} g_r. Every factor is a product of gates
// (exp of a difference of log-gates <= 0), so nothing overflows whatever the gates.
#include <algorithm>
#include <cstddef>

#include "attention/attention_dims.h"
#include "attention/rfa_attention.h"
#include "attention/rfa_scratch.h"
#include "kernels/vector_math.h"

namespace rfa {

inline constexpr int kFeatureGateSub = kRfaSubChunk;  // rows per sub-chunk

// Per-chunk gate factors, each (c, F) row-major (stride F), from the gate
// pre-activations a (row i at a + i * a_stride):
//   g = sigmoid(a), beta = sigmoid(-a) (no cancellation near g = 1),
//   eG_i = exp(G_i) = prod_{r<=i} g_r,  w_j = exp(G_{n-1} - G_j) = prod_{r>j} g_r,
//   A_i = exp(G_i - G_{I0-1}) and Ks_j = exp(G_{J1} - G_j) within each sub-chunk.
template <typename T>
struct FeatureGateRows {
  T *g, *beta, *eG, *w, *A, *Ks;
};

// reset (n) or null: document boundaries, whose rows' decay is 0 (g = 0, beta kept: rfa_layout.h
// gate_rows_reset), before the products.
template <typename T>
inline void feature_gate_rows(const FeatureGateRows<T>& r, const T* a, size_t a_stride, int n, int F,
                              const uint8_t* reset = nullptr) {
  for (int i = 0; i < n; ++i) {
    T* g = r.g + size_t(i) * F;
    T* beta = r.beta + size_t(i) * F;
    const T* ai = a + size_t(i) * a_stride;
#pragma omp simd
    for (int f = 0; f < F; ++f) g[f] = -ai[f], beta[f] = ai[f];
    exp_row(g, F);
    exp_row(beta, F);
#pragma omp simd
    for (int f = 0; f < F; ++f) g[f] = T(1) / (T(1) + g[f]), beta[f] = T(1) / (T(1) + beta[f]);
  }
  if (reset)
    for (int i = 0; i < n; ++i)
      if (reset[i]) std::fill_n(r.g + size_t(i) * F, F, T(0));
  for (int i = 0; i < n; ++i) {
    const T* g = r.g + size_t(i) * F;
    T* eG = r.eG + size_t(i) * F;
    T* A = r.A + size_t(i) * F;
    const bool first = i == 0, sub_first = i % kFeatureGateSub == 0;
    const T* eG_prev = r.eG + size_t(i - 1) * F;
    const T* A_prev = r.A + size_t(i - 1) * F;
#pragma omp simd
    for (int f = 0; f < F; ++f) {
      eG[f] = first ? g[f] : eG_prev[f] * g[f];
      A[f] = sub_first ? g[f] : A_prev[f] * g[f];
    }
  }
  for (int j = n - 1; j >= 0; --j) {
    const T* g_next = r.g + size_t(j + 1) * F;
    T* w = r.w + size_t(j) * F;
    T* Ks = r.Ks + size_t(j) * F;
    const bool last = j == n - 1, sub_last = last || (j + 1) % kFeatureGateSub == 0;
    const T* w_next = r.w + size_t(j + 1) * F;
    const T* Ks_next = r.Ks + size_t(j + 1) * F;
#pragma omp simd
    for (int f = 0; f < F; ++f) {
      w[f] = last ? T(1) : w_next[f] * g_next[f];
      Ks[f] = sub_last ? T(1) : Ks_next[f] * g_next[f];
    }
  }
}

// Inside a sub-chunk, row i against rows j = i down to j0 (a diagonal block), with the
// decay d_ij = prod_{r=j+1..i} g_r (1 at j = i) built as the loop walks down:
//   scores: out[j] = sum_f q_f K_jf d_ijf
//   grads:  dq += sum_j dp[j] K_j ⊙ d_ij,  dK_j += dp[j] q ⊙ d_ij
// A register of features at a time (the compiler would not vectorise the plain loops).
template <typename T>
inline void feature_gate_diag_scores(T* out, const T* q, const T* K, size_t ldk, const T* g, size_t ldg, int i,
                                     int j0, int F) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  V acc[kFeatureGateSub] = {};
  int f0 = 0;
  for (; f0 + W <= F; f0 += W) {
    const V qv = simd_load(q + f0);
    V decay = V{} + T(1);
    for (int j = i; j >= j0; --j) {
      acc[i - j] += qv * simd_load(K + j * ldk + f0) * decay;
      decay *= simd_load(g + j * ldg + f0);
    }
  }
  for (int j = i; j >= j0; --j) {
    T sum = 0;
    for (int l = 0; l < W; ++l) sum += acc[i - j][l];
    out[j] = sum;
  }
  for (int f = f0; f < F; ++f) {  // the features past the last whole register
    T decay = 1;
    for (int j = i; j >= j0; --j) {
      out[j] += q[f] * K[j * ldk + f] * decay;
      decay *= g[j * ldg + f];
    }
  }
}

template <typename T>
inline void feature_gate_diag_grads(T* dq, T* dK, size_t lddk, const T* dp, const T* q, const T* K, size_t ldk,
                                    const T* g, size_t ldg, int i, int j0, int F) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  int f0 = 0;
  for (; f0 + W <= F; f0 += W) {
    const V qv = simd_load(q + f0);
    V dqv = simd_load(dq + f0);
    V decay = V{} + T(1);
    for (int j = i; j >= j0; --j) {
      const V x = dp[j] * decay;
      dqv += x * simd_load(K + j * ldk + f0);
      simd_store(dK + j * lddk + f0, simd_load(dK + j * lddk + f0) + x * qv);
      decay *= simd_load(g + j * ldg + f0);
    }
    simd_store(dq + f0, dqv);
  }
  for (int f = f0; f < F; ++f) {
    T decay = 1;
    for (int j = i; j >= j0; --j) {
      const T x = dp[j] * decay;
      dq[f] += x * K[j * ldk + f];
      dK[j * lddk + f] += x * q[f];
      decay *= g[j * ldg + f];
    }
  }
}

// dst[i, :] += s1[i, :] ⊙ s2 ⊙ x[i, :] for n rows of F (s2 a vector, or null = ones); dst and
// x at stride F, s1 at stride ld1.
template <typename T>
inline void feature_gate_add_scaled(T* dst, const T* s1, size_t ld1, const T* s2, const T* x, int n, int F) {
  for (int i = 0; i < n; ++i) {
    T* di = dst + size_t(i) * F;
    const T* ai = s1 + size_t(i) * ld1;
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

// The chunk's scores P (n, n) at stride ldp, lower triangle, zeros above (the products read
// whole rows), a sub-chunk I of rows at a time: the diagonal block directly,
//   P_ij = q̂_i · (k̃_j ⊙ prod_{r=j+1..i} g_r)  (j from i down to I0),
// the earlier sub-chunks J (last first) as P_IJ = (Q̂_I ⊙ A_I ⊙ B_IJ)(K̃_J ⊙ Ks_J)ᵀ, B_IJ ⊙= A_{J1}
// after J. phiq, Kt, g, A, Ks: (n, F); scratch QA (n, F), KsT (F, ldk), Qb (kSub, F), Bv (F).
template <typename T>
inline void feature_gate_scores(T* P, size_t ldp, const T* phiq, const T* Kt, const T* g, const T* A, const T* Ks,
                                T* QA, T* KsT, size_t ldk, T* Qb, T* Bv, int n, int F) {
  constexpr int kSub = kFeatureGateSub;
  for (int j = 0; j < n; ++j) {
    const size_t jF = size_t(j) * F;
    const T *pq = phiq + jF, *a = A + jF;
    T* qa = QA + jF;
#pragma omp simd
    for (int f = 0; f < F; ++f) qa[f] = pq[f] * a[f];
  }
  for (int f = 0; f < F; ++f)
    for (int j = 0; j < n; ++j) KsT[f * ldk + j] = Kt[size_t(j) * F + f] * Ks[size_t(j) * F + f];
  for (int i = 0; i < n; ++i) std::fill_n(P + size_t(i) * ldp, n, T(0));
  for (int I0 = 0; I0 < n; I0 += kSub) {
    const int sI = std::min(kSub, n - I0);
    for (int i = I0; i < I0 + sI; ++i) feature_gate_diag_scores(P + size_t(i) * ldp, phiq + size_t(i) * F, Kt, F, g, F, i, I0, F);
    std::fill_n(Bv, F, T(1));
    for (int J0 = I0 - kSub; J0 >= 0; J0 -= kSub) {
      for (int i = 0; i < sI; ++i) {
        const T* qa = QA + size_t(I0 + i) * F;
        T* qb = Qb + size_t(i) * F;
#pragma omp simd
        for (int f = 0; f < F; ++f) qb[f] = qa[f] * Bv[f];
      }
      matmul(P + size_t(I0) * ldp + J0, ldp, Qb, F, KsT + J0, ldk, sI, F, kSub, T(1), false);
      const T* AJ = A + size_t(J0 + kSub - 1) * F;
#pragma omp simd
      for (int f = 0; f < F; ++f) Bv[f] *= AJ[f];
    }
  }
}

// Their gradients (from dP (n, n) at stride ldp, lower): dQ, dK (n, F) overwritten,
//   dq̂_i = sum_{j<=i} dP_ij k̃_j ⊙ exp(G_i - G_j),  dk̃_j = sum_{i>=j} dP_ij q̂_i ⊙ exp(G_i - G_j),
// the diagonal blocks directly and the earlier sub-chunks as products:
//   dq̂_I += A_I ⊙ B_IJ ⊙ (dP_IJ KK_J),  dk̃_J += Ks_J ⊙ B_IJ ⊙ (dP_IJᵀ QA_I)
// (dP_IJᵀ read in place: matmul_at). Qp, Kt, QA, KK at stride ld; g, A, Ks (n, F); X (kSub, F), Bv (F) scratch.
template <typename T>
inline void feature_gate_score_grads(T* dQ, T* dK, const T* dP, size_t ldp, const T* Qp, const T* Kt, const T* QA,
                                     const T* KK, size_t ld, const T* g, const T* A, const T* Ks, T* X, T* Bv, int n,
                                     int F) {
  constexpr int kSub = kFeatureGateSub;
  std::fill_n(dQ, size_t(n) * F, T(0));
  std::fill_n(dK, size_t(n) * F, T(0));
  for (int I0 = 0; I0 < n; I0 += kSub) {
    const int sI = std::min(kSub, n - I0);
    for (int i = I0; i < I0 + sI; ++i)
      feature_gate_diag_grads(dQ + size_t(i) * F, dK, F, dP + size_t(i) * ldp, Qp + i * ld, Kt, ld, g, F, i, I0, F);
    std::fill_n(Bv, F, T(1));
    for (int J0 = I0 - kSub; J0 >= 0; J0 -= kSub) {
      matmul(X, F, dP + size_t(I0) * ldp + J0, ldp, KK + J0 * ld, ld, sI, kSub, F, T(1), false);
      feature_gate_add_scaled(dQ + size_t(I0) * F, A + size_t(I0) * F, F, Bv, X, sI, F);
      matmul_at(X, F, dP + size_t(I0) * ldp + J0, ldp, QA + I0 * ld, ld, kSub, sI, F, T(1), false);
      feature_gate_add_scaled(dK + size_t(J0) * F, Ks + size_t(J0) * F, F, Bv, X, kSub, F);
      const T* AJ = A + size_t(J0 + kSub - 1) * F;
#pragma omp simd
      for (int f = 0; f < F; ++f) Bv[f] *= AJ[f];
    }
  }
}

}  // namespace rfa
