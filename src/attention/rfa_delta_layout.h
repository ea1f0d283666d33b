#pragma once
// Internal: where the rfa_delta forward saves its activations and how the workspace is cut,
// each a carve() that both counts (base = null) and points the buffers, so the size functions
// and the kernels cannot disagree (as rfa_scratch.h does for RFA). Elements of T; c is the
// chunk length of the call (rfa_chunk_len).
//
// Workspace = [shared part | thread 0's slice | thread 1's slice | ...], a slice big enough
// for the forward's or the backward's per-(b, h) scratch.
#include <algorithm>
#include <cstddef>

#include "attention/attention_dims.h"
#include "attention/feature_map.h"
#include "attention/rfa_attention.h"
#include "attention/rfa_scratch.h"

namespace rfa {

struct RfaDeltaDims {
  size_t F, Dh, D, Cc, n_chunks, W;  // W: feature_map_packed_size
};
inline RfaDeltaDims rfa_delta_dims(const RfaConfig& c, const AttentionDims& d) {
  RfaDeltaDims s;
  s.F = size_t(rfa_feature_count(c)), s.Dh = size_t(d.Dh), s.D = size_t(c.num_features);
  s.Cc = size_t(rfa_chunk_len(c, d));
  s.n_chunks = d.T > 0 ? (size_t(d.T) + s.Cc - 1) / s.Cc : 0;
  s.W = feature_map_packed_size(c.num_features, d.Dh);
  return s;
}

// The saved activations (rfa_delta.h lists them).
template <typename T>
struct RfaDeltaSaved {
  T *phi_q, *phi_k;     // (B, H, T, F)
  T *r_q, *r_k;         // (B, H, T) the l2 normalisations' 1/|x|
  T *alpha_a, *beta_a;  // (B, T, H) the gates' pre-activations, the gate product's layout (rfa_gate_products.h)
  T* states;            // (B, H, n_chunks, F, Dh) S entering each chunk
  size_t carve(T* base, const RfaDeltaDims& s, const AttentionDims& d) {
    ScratchCarver<T> k(base);
    const size_t bh = size_t(d.B) * d.H, bht = bh * size_t(d.T);
    k.take(phi_q, bht * s.F);
    k.take(phi_k, bht * s.F);
    k.take(r_q, bht);
    k.take(r_k, bht);
    k.take(alpha_a, bht);
    k.take(beta_a, bht);
    k.take(states, bh * s.n_chunks * s.F * s.Dh);
    return k.taken();
  }
};

// The part all threads share.
template <typename T>
struct RfaDeltaShared {
  T* dsigma_parts;  // (B, H, Dh) per (b, h) partial dsigma, summed over b after the tasks
  T *da, *db;       // (B, T, H) the gates' pre-activation gradients; the forward's pre-activations
                    // when nothing is saved (no backward follows then)
  size_t carve(T* base, const AttentionDims& d) {
    ScratchCarver<T> k(base);
    const size_t bh = size_t(d.B) * d.H;
    k.take(dsigma_parts, bh * d.Dh);
    k.take(da, bh * d.T);
    k.take(db, bh * d.T);
    return k.taken();
  }
};

// One thread's scratch in the forward, per (b, h), reused across chunks.
template <typename T>
struct RfaDeltaForwardScratch {
  T* xbar;          // (Dh)
  T* SX;            // (2c, Dh) sigma ⊙ x̄ of the q rows, then of the k rows
  T* U;             // (c, D)   W (sigma ⊙ x̄)
  T *phiq, *phik;   // (c, F)   when nothing is saved
  T* S;             // (F, Dh)  the running state
  T *e, *u;         // (Dh)     one token's v - S'ᵀk and beta of it
  T* Wt;            // this head's W packed for the forward (feature_map_pack_forward)
  size_t carve(T* base, const RfaDeltaDims& s) {
    ScratchCarver<T> k(base);
    k.take(xbar, s.Dh);
    k.take(SX, 2 * s.Cc * s.Dh);
    k.take(U, s.Cc * s.D);
    k.take(phiq, s.Cc * s.F);
    k.take(phik, s.Cc * s.F);
    k.take(S, s.F * s.Dh);
    k.take(e, s.Dh);
    k.take(u, s.Dh);
    k.take(Wt, s.W);
    return k.taken();
  }
};

// One thread's scratch in the backward, per (b, h), reused across chunks.
template <typename T>
struct RfaDeltaBackwardScratch {
  T *xbar, *dxbar;  // (Dh)
  T* Wq;            // (c, Dh)  Wᵀ du of one side's rows
  T* DU;            // (c, D)   du
  T *dPq, *dPk;     // (c, F)   d phi(q), d phi(k)
  T* Sprev;         // (c, Dh, F) the state entering each token of the chunk, recomputed, transposed
  T *E, *Uv;        // (c, Dh)  each token's e = v - S'ᵀk and u = beta e
  T* S;             // (Dh, F)  the state while recomputing (transposed, rfa_delta_token.h)
  T* dS;            // (Dh, F)  the gradient of the state, carried backwards (transposed)
  T *du, *dr;       // (Dh)     one token's du, dr
  T* dav;           // (F)      dalpha's vector of partial sums
  T* Wp;            // this head's W packed for the backward (feature_map_pack_backward)
  size_t carve(T* base, const RfaDeltaDims& s) {
    ScratchCarver<T> k(base);
    const size_t FD = s.F * s.Dh;
    k.take(xbar, s.Dh);
    k.take(dxbar, s.Dh);
    k.take(Wq, s.Cc * s.Dh);
    k.take(DU, s.Cc * s.D);
    k.take(dPq, s.Cc * s.F);
    k.take(dPk, s.Cc * s.F);
    k.take(Sprev, s.Cc * FD);
    k.take(E, s.Cc * s.Dh);
    k.take(Uv, s.Cc * s.Dh);
    k.take(S, FD);
    k.take(dS, FD);
    k.take(du, s.Dh);
    k.take(dr, s.Dh);
    k.take(dav, s.F);
    k.take(Wp, s.W);
    return k.taken();
  }
};

inline size_t rfa_delta_thread_scratch_size(const RfaDeltaDims& s) {
  return std::max(RfaDeltaForwardScratch<float>{}.carve(nullptr, s),
                  RfaDeltaBackwardScratch<float>{}.carve(nullptr, s));
}

}  // namespace rfa
