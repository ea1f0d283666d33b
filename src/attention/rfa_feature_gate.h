#pragma once
// Internal: RFA-Gate with the feature gate (RfaConfig::feature_gate), training form,
// docs/rfa-attention.md section 5. rfa_forward / rfa_backward hand over to these when
// the option is set. Per (b, h), with F features and v' = [v, 1]:
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
#include <cstddef>

#include "attention/attention_dims.h"
#include "attention/rfa_attention.h"
#include "attention/rfa_scratch.h"
#include "kernels/vector_math.h"

namespace rfa {

inline constexpr int kFeatureGateSub = 16;  // rows per sub-chunk (the matmuls' register width)

template <typename T>
void rfa_feature_forward(T* out, T* saved, Workspace<T> workspace, const RfaInputs<T>& in, const RfaParams<T>& p,
                         const RfaConfig& c, const AttentionDims& d, const T* state_in, T* state_out);
template <typename T>
void rfa_feature_backward(const RfaInputGrads<T>& grads, const RfaParamGrads<T>& pgrads, Workspace<T> workspace,
                          const T* dout, const T* out, const T* saved, const RfaInputs<T>& in,
                          const RfaParams<T>& p, const RfaConfig& c, const AttentionDims& d);

// Per-chunk gate factors, each (c, F) row-major (stride F), from the gate
// pre-activations a (row i at a + i * a_stride):
//   g = sigmoid(a), beta = sigmoid(-a) (no cancellation near g = 1),
//   eG_i = exp(G_i) = prod_{r<=i} g_r,  w_j = exp(G_{n-1} - G_j) = prod_{r>j} g_r,
//   A_i = exp(G_i - G_{I0-1}) and Ks_j = exp(G_{J1} - G_j) within each sub-chunk.
template <typename T>
struct FeatureGateRows {
  T *g, *beta, *eG, *w, *A, *Ks;
};

template <typename T>
inline void feature_gate_rows(const FeatureGateRows<T>& r, const T* a, size_t a_stride, int n, int F) {
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

// One thread's scratch in the feature-gate forward (per (b, h), reused across chunks).
template <typename T>
struct RfaFeatureForwardScratch {
  T* xbar;          // (Dh)
  T* SX;            // (2c, Dh)   sigma ⊙ x̄ for q rows, then k rows
  T* U;             // (2c, D)
  T* phiq_scratch;  // (c, F)     q̂ when nothing is saved
  T* phik_scratch;  // (c, F)
  T *g, *beta, *eG, *w, *A, *Ks;  // (c, F) each: FeatureGateRows
  T* Kt;            // (c, F)     k̃
  T* QA;            // (c, F)     Q̂ ⊙ A
  T* KsT;           // (F, CP)    (K̃ ⊙ Ks)ᵀ
  T* KwT;           // (F, CP)    (K̃ ⊙ w)ᵀ
  T* Qb;            // (kSub, F)  Q̂_I ⊙ A_I ⊙ B_IJ
  T* Bv;            // (F)        B_IJ
  T* decay;         // (F)        within-sub-chunk decay of one score row
  T* Vp;            // (c, EP)
  T* Y;             // (c, E)
  T* P_scratch;     // (c, c)
  T* S;             // (F, EP)
  T* Wt;            // packed W
  T* Qe;            // (c, F)     Q̂ ⊙ eG
  size_t carve(T* base, const RfaScratchDims& s) {
    ScratchCarver<T> k(base);
    const size_t cF = s.Cc * s.F;
    k.take(xbar, s.Dh);
    k.take(SX, 2 * s.Cc * s.Dh);
    k.take(U, 2 * s.Cc * s.D);
    k.take(phiq_scratch, cF);
    k.take(phik_scratch, cF);
    for (T** b : {&g, &beta, &eG, &w, &A, &Ks}) k.take(*b, cF);
    k.take(Kt, cF);
    k.take(QA, cF);
    k.take(KsT, s.F * s.CP);
    k.take(KwT, s.F * s.CP);
    k.take(Qb, size_t(kFeatureGateSub) * s.F);
    k.take(Bv, s.F);
    k.take(decay, s.F);
    k.take(Vp, s.Cc * s.EP);
    k.take(Y, s.Cc * s.E);
    k.take(P_scratch, s.Cc * s.Cc);
    k.take(S, s.F * s.EP);
    k.take(Wt, s.W);
    k.take(Qe, cF);
    return k.taken();
  }
  FeatureGateRows<T> rows() const { return {g, beta, eG, w, A, Ks}; }
};

// One thread's scratch in the feature-gate backward.
template <typename T>
struct RfaFeatureBackwardScratch {
  T* xbar;   // (Dh)
  T* dxbar;  // (Dh)
  T* Wq;     // (2c, Dh)
  T* DU;     // (2c, D)
  T *g, *beta, *eG, *w, *A, *Ks;  // (c, F) each
  T* kscale; // (c)       delta
  T* Kt;     // (c, FP)   k̃
  T* Qp;     // (c, FP)   q̂
  T* QA;     // (c, FP)   Q̂ ⊙ A
  T* KK;     // (c, FP)   K̃ ⊙ Ks, then K̃ ⊙ w
  T* VpT;    // (E, CP)
  T* Vp;     // (c, E)
  T* dY;     // (c, EP)
  T* dQ;     // (c, F)    dq̂
  T* dK;     // (c, F)    dk̃
  T* dV;     // (c, E)
  T* dP;     // (c, c)    dY V'ᵀ, lower
  T* PT;     // (c, c)    Pᵀ, upper
  T* dPT;    // (c, c)    dPᵀ, upper
  T* X;      // (c, F)    one product before its diagonal scaling
  T* Bv;     // (F)
  T* decay;  // (F)
  T* dlam;   // (F)       running sum_{t>=r} dG_t
  T* dS;     // (F, EP)
  T* dST;    // (E, FP)
  T* SpT;    // (E, FP)
  T* QeT;    // (F, c)
  T* Wp;     // packed W
  size_t carve(T* base, const RfaScratchDims& s) {
    ScratchCarver<T> k(base);
    const size_t cF = s.Cc * s.F, cFP = s.Cc * s.FP;
    k.take(xbar, s.Dh);
    k.take(dxbar, s.Dh);
    k.take(Wq, 2 * s.Cc * s.Dh);
    k.take(DU, 2 * s.Cc * s.D);
    for (T** b : {&g, &beta, &eG, &w, &A, &Ks}) k.take(*b, cF);
    k.take(kscale, s.Cc);
    k.take(Kt, cFP);
    k.take(Qp, cFP);
    k.take(QA, cFP);
    k.take(KK, cFP);
    k.take(VpT, s.E * s.CP);
    k.take(Vp, s.Cc * s.E);
    k.take(dY, s.Cc * s.EP);
    k.take(dQ, cF);
    k.take(dK, cF);
    k.take(dV, s.Cc * s.E);
    k.take(dP, s.Cc * s.Cc);
    k.take(PT, s.Cc * s.Cc);
    k.take(dPT, s.Cc * s.Cc);
    k.take(X, cF);
    k.take(Bv, s.F);
    k.take(decay, s.F);
    k.take(dlam, s.F);
    k.take(dS, s.F * s.EP);
    k.take(dST, s.E * s.FP);
    k.take(SpT, s.E * s.FP);
    k.take(QeT, s.F * s.Cc);
    k.take(Wp, s.W);
    return k.taken();
  }
  FeatureGateRows<T> rows() const { return {g, beta, eG, w, A, Ks}; }
};


}  // namespace rfa
