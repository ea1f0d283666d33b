#pragma once
// Internal: the RFA cores' workspace, carved from one table the way
// model/activations.cpp carves the activations. Each struct's carve() both
// sizes its part (base = nullptr: only counts) and points every buffer into it,
// so the size functions and the kernels cannot disagree. Elements of T; c is the
// chunk size, matrices that vecmat/matmul read as B have leading dimensions
// padded by pad16 (FP, EP, CP).
//
// Workspace = [backward's shared part | thread 0's slice | thread 1's slice | ...],
// a slice big enough for either the forward's or the backward's scratch.
#include <algorithm>
#include <cstddef>

#include "attention/attention_dims.h"
#include "attention/feature_map.h"
#include "attention/rfa_attention.h"
#include "kernels/vector_math.h"

namespace rfa {

// Rows per sub-chunk of the feature gate (rfa_feature_gate.h): the matmuls' register width.
inline constexpr int kRfaSubChunk = 16;

// Sizes a carve works from.
struct RfaScratchDims {
  size_t F, E, Cc, D, Dh, FP, EP, CP, W;  // E = Dh + 1; W: feature_map_packed_size
  size_t W_gate;                          // gate values per row: 1 (scalar gate, or ungated), F (feature gate)
};
inline RfaScratchDims rfa_scratch_dims(const RfaConfig& c, const AttentionDims& d) {
  RfaScratchDims s;
  s.F = rfa_feature_count(c), s.E = d.Dh + 1, s.Cc = rfa_chunk_len(c, d), s.D = c.num_features, s.Dh = d.Dh;
  s.FP = pad16(int(s.F)), s.EP = pad16(int(s.E)), s.CP = pad16(int(s.Cc));
  s.W = feature_map_packed_size(c.num_features, d.Dh);
  s.W_gate = size_t(rfa_gate_width(c));
  return s;
}

// Hands out consecutive pieces of base (or only counts, when base is null).
template <typename T>
class ScratchCarver {
 public:
  explicit ScratchCarver(T* base) : base_(base) {}
  void take(T*& p, size_t n) {
    p = base_ ? base_ + at_ : nullptr;
    at_ += n;
  }
  size_t taken() const { return at_; }

 private:
  T* base_;
  size_t at_ = 0;
};

// One thread's scratch in the chunked forward (per (b, h), reused across chunks), for
// either gate: W = rfa_gate_width (1 scalar, F feature); buffers one gate does not use
// take nothing.
template <typename T>
struct RfaForwardScratch {
  T* rn;            // (2c)       r = (|x|² + eps)^(-1/2) of the q rows, then the k rows
  T* SX;            // (2c, Dh)   sigma ⊙ x̄ for q rows, then k rows
  T* U;             // (2c, D)    W (sigma ⊙ x̄)
  T* phiq_scratch;  // (c, F)     q̂ when nothing is saved
  T* phik_scratch;  // (c, F)     phi(k) when nothing is saved
  T *g, *beta, *eG, *w;  // (c, W) each: gate, 1 - gate, exp(G), exp(G_C - G)
  T* kscale;        // (c)        what scales phi(k) besides a feature gate's beta: delta beta (scalar), delta (feature)
  T* arow;          // (c)        scalar gate: this head's pre-activations a, gathered from (B, T, H)
  T* mrow;          // (c)        scalar gate: one row of M
  T *A, *Ks;        // (c, F)     feature gate: the sub-chunk factors (rfa_feature_gate.h)
  T* Kt;            // (c, F)     k̃ = kscale (beta) phi(k)
  T* KtT;           // (F, CP)    scalar gate: K̃ᵀ
  T* QA;            // (c, F)     feature gate: Q̂ ⊙ A
  T* KsT;           // (F, CP)    feature gate: (K̃ ⊙ Ks)ᵀ
  T* Qb;            // (kSub, F)  feature gate: Q̂_I ⊙ A_I ⊙ B_IJ
  T* Bv;            // (F)        feature gate: B_IJ
  T* Kw;            // (c, F)     K̃ ⊙ exp(G_C - G) (read transposed)
  T* Vp;            // (c, EP)    [v, 1]
  T* Y;             // (c, E)     [num, den]
  T* P_scratch;     // (c, c)     the chunk's scores, lower triangle (0 above it), when nothing is saved
  T* S;             // (F, EP)    running state
  const T* Wt;      // (Dh, pad16(D)) this head's W, packed: in RfaBackwardShared::W_heads (not carved here)
  T* Qe;            // (c, F)     Q̂ ⊙ exp(G)
  T* z;             // (F)        the state's normaliser column, contiguous (S_prev's, then the update's part)
  size_t carve(T* base, const RfaScratchDims& s) {
    ScratchCarver<T> k(base);
    const size_t cF = s.Cc * s.F, cW = s.Cc * s.W_gate, scalar = s.W_gate == 1 ? 1 : 0, feature = 1 - scalar;
    k.take(rn, 2 * s.Cc);
    k.take(SX, 2 * s.Cc * s.Dh);
    k.take(U, 2 * s.Cc * s.D);
    k.take(phiq_scratch, cF);
    k.take(phik_scratch, cF);
    for (T** b : {&g, &beta, &eG, &w}) k.take(*b, cW);
    k.take(kscale, s.Cc);
    k.take(arow, scalar * s.Cc);
    k.take(mrow, scalar * s.Cc);
    k.take(A, feature * cF);
    k.take(Ks, feature * cF);
    k.take(Kt, cF);
    k.take(KtT, scalar * s.F * s.CP);
    k.take(QA, feature * cF);
    k.take(KsT, feature * s.F * s.CP);
    k.take(Qb, feature * kRfaSubChunk * s.F);
    k.take(Bv, feature * s.F);
    k.take(Kw, cF);
    k.take(Vp, s.Cc * s.EP);
    k.take(Y, s.Cc * s.E);
    k.take(P_scratch, s.Cc * s.Cc);
    k.take(S, s.F * s.EP);
    k.take(Qe, cF);
    k.take(z, s.F);
    return k.taken();
  }
};

// One thread's scratch in the chunked backward (per (b, h), reused across chunks), for either gate.
template <typename T>
struct RfaBackwardScratch {
  T* xbar;   // (Dh)
  T* dxbar;  // (Dh)
  T* Wq;     // (2c, Dh)  Wᵀ du for q rows, then k rows
  T* DU;     // (2c, D)   du
  T* Kt;     // (c, FP)   k̃
  T* Qp;     // (c, FP)   q̂ (copy of the saved rows, padded)
  T* VpT;    // (E, CP)   V'ᵀ
  T* Vp;     // (c, E)    [v, 1]
  T* dY;     // (c, EP)   [dnum, dden]
  T* dQ;     // (c, F)    dq̂
  T* dK;     // (c, F)    dk̃
  T* dV;     // (c, E)    dv'
  T* dA;     // (c, c)    dP = dY V'ᵀ, lower (0 right of the diagonal); the scalar gate's ⊙ M
  T* M;      // (c, c)    scalar gate: exp(G_i - G_j), lower
  T *g, *beta, *eG, *w;  // (c, W) each
  T* arow;   // (c)       scalar gate: this head's gate pre-activations a, gathered from (B, T, H)
  T* kscale; // (c)       delta beta (scalar gate: k̃ = kscale phi(k)), delta (feature gate: k̃ = kscale beta ⊙ phi(k))
  T *A, *Ks; // (c, F)    feature gate: sub-chunk factors
  T* QA;     // (c, FP)   feature gate: Q̂ ⊙ A
  T* KK;     // (c, FP)   feature gate: K̃ ⊙ Ks
  T* Bv;     // (F)       feature gate: B_IJ
  T* dlam;   // (F)       feature gate: running sum_{t>=r} dG_t
  T* dS;     // (F, EP)   gradient of the state leaving the current chunk
  T* dST;    // (E, FP)
  T* SpT;    // (E, FP)   S_prev transposed
  T* Qe;     // (c, F)    Q̂ ⊙ exp G (read transposed)
  const T* Wp;  // (D, pad16(Dh)) this head's W, packed: in RfaBackwardShared::W_heads (not carved here)
  T* tmp;    // (c, max(FP, EP)) a scaled copy for one product, or one product before its scaling
  T* dz;     // (F)       the normaliser column's part of dS_prev, contiguous
  size_t carve(T* base, const RfaScratchDims& s) {
    ScratchCarver<T> k(base);
    const size_t cF = s.Cc * s.F, cW = s.Cc * s.W_gate, scalar = s.W_gate == 1 ? 1 : 0, feature = 1 - scalar;
    k.take(xbar, s.Dh);
    k.take(dxbar, s.Dh);
    k.take(Wq, 2 * s.Cc * s.Dh);
    k.take(DU, 2 * s.Cc * s.D);
    k.take(Kt, s.Cc * s.FP);
    k.take(Qp, s.Cc * s.FP);
    k.take(VpT, s.E * s.CP);
    k.take(Vp, s.Cc * s.E);
    k.take(dY, s.Cc * s.EP);
    k.take(dQ, cF);
    k.take(dK, cF);
    k.take(dV, s.Cc * s.E);
    k.take(dA, s.Cc * s.Cc);
    k.take(M, scalar * s.Cc * s.Cc);
    for (T** b : {&g, &beta, &eG, &w}) k.take(*b, cW);
    k.take(arow, scalar * s.Cc);
    k.take(kscale, s.Cc);
    k.take(A, feature * cF);
    k.take(Ks, feature * cF);
    k.take(QA, feature * s.Cc * s.FP);
    k.take(KK, feature * s.Cc * s.FP);
    k.take(Bv, feature * s.F);
    k.take(dlam, feature * s.F);
    k.take(dS, s.F * s.EP);
    k.take(dST, s.E * s.FP);
    k.take(SpT, s.E * s.FP);
    k.take(Qe, cF);
    k.take(tmp, s.Cc * std::max(s.FP, s.EP));
    k.take(dz, s.F);
    return k.taken();
  }
};

// The part shared by all threads, before the slices.
template <typename T>
struct RfaBackwardShared {
  T* dsigma_parts;  // (B, H, Dh)        per (b, h) partial dsigma (the backward)
  T* da;            // (B, T, H, W)      gate pre-activation gradients, the gate product's layout
                    //                   (W = rfa_gate_width: 1 for the scalar gate, F for the feature gate)
  T* gate_a;        // (B, T, H, W)      the forward's gate pre-activations when nothing is saved
  T* W_heads;       // (H, feature_map_packed_size) every head's W packed once a call, for the forward
                    //                   (feature_map_pack_forward) or the backward (..._backward); a (b, h)
                    //                   reads its head's (packing it per (b, h) was 3-4% of the nano forward)
  size_t carve(T* base, const RfaConfig& c, const AttentionDims& d, int /*threads*/) {
    ScratchCarver<T> k(base);
    const size_t bh = static_cast<size_t>(d.B) * d.H;
    k.take(dsigma_parts, bh * d.Dh);
    k.take(da, bh * d.T * rfa_gate_width(c));
    k.take(gate_a, c.gated ? bh * d.T * rfa_gate_width(c) : 0);
    k.take(W_heads, static_cast<size_t>(d.H) * feature_map_packed_size(c.num_features, d.Dh));
    return k.taken();
  }
};

// Elements of one thread's slice: the larger of the forward's and the backward's
// scratch (the counts do not depend on T).
inline size_t rfa_thread_scratch_size(const RfaConfig& c, const AttentionDims& d) {
  const RfaScratchDims s = rfa_scratch_dims(c, d);
  return std::max(RfaForwardScratch<float>{}.carve(nullptr, s), RfaBackwardScratch<float>{}.carve(nullptr, s));
}
inline size_t rfa_shared_scratch_size(const RfaConfig& c, const AttentionDims& d, int threads) {
  return RfaBackwardShared<float>{}.carve(nullptr, c, d, threads);
}

}  // namespace rfa
