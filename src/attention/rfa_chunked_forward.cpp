// RFA chunked forward, docs/rfa-attention.md sections 3 and 5, for both gates: one
// algorithm, the gate's form the one difference. Per (b, h), chunks in order; inside a
// chunk of n rows with chunk-local cumulative log-gates G (a scalar per row, or a vector
// over the F features with the feature gate; fp32 or better):
//   P_ij   = sum_f q̂_if k̃_jf exp(G_if - G_jf)  (j <= i)
//            scalar gate: (Q̂ K̃ᵀ) ⊙ M, M_ij = exp(G_i - G_j), built as products of gates;
//            feature gate: sub-chunk products and diagonal blocks (rfa_feature_gate.h)
//   Y      = P V'  +  (Q̂ ⊙ exp(G)) S_prev
//   S_next = exp(G_n) ⊙ S_prev + (K̃ ⊙ exp(G_n - G))ᵀ V'        (row f of S scaled by feature f's decay)
// Products are matmul calls (register tiles times a padded matrix). Ungated RFA is the
// scalar gate with g = beta = 1. Document boundaries: g = 0 at a document's first row (beta
// kept), so M, exp(G) and exp(G_n - G) are 0 across it; ungated RFA then builds its M too.
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
namespace {

// One (b, h) of the forward, chunk by chunk; each step below is one group of the formulas
// at the top of this file, in the order they run. kFeature: the feature gate (gate values
// (n, F)); else the scalar gate or none (n).
template <typename T, bool kFeature>
struct RfaHeadForward : RfaChunkAt<T, kFeature> {
  using At = RfaChunkAt<T, kFeature>;
  using At::c, At::d, At::L, At::sd, At::b, At::h, At::bh, At::ci, At::t0, At::n, At::bht0, At::chunk_at, At::row_of,
      At::task_row, At::gate_at, At::gate_row, At::reset, At::reset_inner, At::position;
  // The problem (and in the base: the sizes, this (b, h), the chunk).
  const RfaInputs<T>& in;
  T* out;          // (B, T, C)
  T* saved;        // null: no backward follows
  const T* gate_a; // (B, T, H, W) the gate pre-activations (null ungated)
  // This (b, h)'s parameters and scratch.
  const T* sigma;  // (Dh)
  const RfaForwardScratch<T>& s;
  bool state_zero = true;  // S is all zeros (no state entered, or none yet)
  // The chunk's buffers.
  T* phiq = nullptr;  // (c, F) saved, or scratch
  T* phik = nullptr;  // (c, F)
  T* P = nullptr;     // (c, c)

  void head_enter(const T* state_in) {
    const int E = L.E;
    const size_t EP = sd.EP, FE = static_cast<size_t>(L.F) * E;
    state_zero = state_in == nullptr;
    if (saved) saved[L.state_flags + bh] = state_zero ? T(0) : T(1);
    if (!state_zero)
      for (int f = 0; f < L.F; ++f) copy_row(s.S + f * EP, state_in + bh * FE + size_t(f) * E, E);
  }

  void chunk_enter(int chunk) {
    const int Cc = int(sd.Cc), F = L.F, E = L.E;
    const size_t EP = sd.EP, FE = static_cast<size_t>(F) * E;
    chunk_at(chunk, in);
    if (reset && reset[0]) state_zero = true;  // a document starts the chunk: nothing before it is read
    phiq = saved ? saved + L.phi_q + bht0 * F : s.phiq_scratch;
    phik = saved ? saved + L.phi_k + bht0 * F : s.phik_scratch;
    P = saved ? saved + L.P + (static_cast<size_t>(bh) * L.n_chunks + ci) * Cc * Cc : s.P_scratch;
    // The chunk-entry state, for the backward. It never reads the first chunk's when no state
    // entered (flag 0: chunk_state_in_grads), so that one is not written (8 KiB a (b, h) at nano).
    if (saved && (ci > 0 || saved[L.state_flags + bh] != T(0))) {
      T* entry = saved + L.states + (static_cast<size_t>(bh) * L.n_chunks + ci) * FE;
      if (state_zero) std::fill_n(entry, FE, T(0));
      else
        for (int f = 0; f < F; ++f) copy_row(entry + size_t(f) * E, s.S + f * EP, E);
    }
  }

  // Rows of the chunk: normalisation (r saved), sigma ⊙ x̄ for the feature maps, v' = [v, 1].
  // r = (|x|² + eps)^(-1/2) in three passes over the chunk (the q rows' then the k rows'): the
  // sums of squares, then the roots and divisions as vectors, then the scaling. One row at a time,
  // each row's sum -> sqrt -> divide -> scale chain stalled the next (8.7% of the forward at 6x384).
  void chunk_rows() {
    const int Cc = int(sd.Cc), Dh = d.Dh;
    const size_t EP = sd.EP;
    const T eps_n = T(c.eps_n);
    T *rq = s.rn, *rk = s.rn + Cc;
    for (int i = 0; i < n; ++i) {
      const size_t row = row_of(i);
      rq[i] = dot(in.q + row, in.q + row, Dh);
      rk[i] = dot(in.k + row, in.k + row, Dh);
    }
    RFA_OMP_SIMD_FULL  // (-fno-math-errno: sqrt as a vector instruction, the same bits as one at a time)
    for (int i = 0; i < n; ++i) {
      rq[i] = l2_inverse_norm(rq[i], eps_n);
      rk[i] = l2_inverse_norm(rk[i], eps_n);
    }
    if (saved) {
      std::copy_n(rq, n, saved + L.r_q + bht0);
      std::copy_n(rk, n, saved + L.r_k + bht0);
    }
    for (int i = 0; i < n; ++i) {
      const size_t row = row_of(i);
      // omp simd on the per-row loops: the buffers never overlap, but the compiler
      // cannot prove it through the scratch pointers and would run them scalar.
      const T *q = in.q + row, *k = in.k + row, ri = rq[i], rki = rk[i];
      T *SXq = s.SX + size_t(i) * Dh, *SXk = s.SX + size_t(Cc + i) * Dh;
      RFA_OMP_SIMD_FULL  // sigma ⊙ x̄, x̄ = x r rounded first (as l2_normalize_forward)
      for (int e = 0; e < Dh; ++e) {
        SXq[e] = sigma[e] * (q[e] * ri);
        SXk[e] = sigma[e] * (k[e] * rki);
      }
      copy_row(s.Vp + i * EP, in.v + row, Dh);
      s.Vp[i * EP + Dh] = T(1);
    }
    // The next chunk's q, k and v rows (a head's Dh columns of rows C apart), or after the last
    // chunk the next task's first (b, h + 1, or b + 1 and head 0): request them into L2 now,
    // this chunk's products hide the latency (the hardware prefetcher does not follow a stride
    // that crosses a page every few rows).
    const bool last = t0 + n >= d.T;
    const int64_t next_bh = last ? bh + 1 : bh;
    if (next_bh >= int64_t(d.B) * d.H) return;
    const int next_t0 = last ? 0 : t0 + n, next = std::min(Cc, d.T - next_t0);
    for (int i = 0; i < next; ++i)
      for (int e = 0; e < Dh; e += 64 / int(sizeof(T))) {
        const size_t row = task_row(next_bh, next_t0 + i) + e;
        __builtin_prefetch(in.q + row, 0, 2);
        __builtin_prefetch(in.k + row, 0, 2);
        __builtin_prefetch(in.v + row, 0, 2);
        __builtin_prefetch(out + row, 1, 2);
      }
  }

  // Gates of the chunk's rows: g, beta = 1 - g, eG = exp(G), w = exp(G_n - G) (width W), the
  // feature gate's sub-chunk factors, and kscale: k̃ = kscale beta ⊙ phi(k) (feature gate) or
  // kscale phi(k) (scalar: kscale = delta beta; ungated: beta = 1).
  void chunk_gates() {
    if constexpr (kFeature) {
      feature_gate_rows(FeatureGateRows<T>{s.g, s.beta, s.eG, s.w, s.A, s.Ks}, gate_a + gate_row(0),
                        size_t(d.H) * L.F, n, L.F, reset);
      for (int j = 0; j < n; ++j) s.kscale[j] = rfa_discount<T>(c, position(in, j));
    } else {
      if (c.gated)
        for (int i = 0; i < n; ++i) s.arow[i] = gate_a[gate_row(i)];
      gate_rows(s.g, s.beta, s.eG, c.gated ? s.arow : nullptr, n);
      if (reset) gate_rows_reset(s.g, s.eG, reset, n);  // the decay into a document's first row is 0
      gate_suffix(s.w, s.g, n);
      for (int j = 0; j < n; ++j)
        s.kscale[j] = c.time_discount ? s.beta[j] * rfa_discount<T>(c, position(in, j)) : s.beta[j];
    }
  }

  // Feature maps of q and k as products; k̃.
  void chunk_features() {
    const int Cc = int(sd.Cc), D = c.num_features, Dh = d.Dh, F = L.F;
    feature_map_forward_rows(phiq, s.U, s.SX, s.Wt, c.feature_map, n, D, Dh);
    feature_map_forward_rows(phik, s.U, s.SX + size_t(Cc) * Dh, s.Wt, c.feature_map, n, D, Dh);
    for (int j = 0; j < n; ++j) {
      const size_t jF = size_t(j) * F;
      const T ks = s.kscale[j];
      const T *pk = phik + jF, *beta = s.beta + (kFeature ? jF : 0);
      T* Kt = s.Kt + jF;
      if constexpr (kFeature) {
        RFA_OMP_SIMD_FULL
        for (int f = 0; f < F; ++f) Kt[f] = ks * beta[f] * pk[f];  // k̃ = delta beta ⊙ phi(k)
      } else {
        RFA_OMP_SIMD_FULL
        for (int f = 0; f < F; ++f) Kt[f] = ks * pk[f];  // k̃ = delta beta phi(k)
      }
    }
  }

  // P, the chunk's scores, lower triangle and 0 right of the diagonal (the backward reads P's columns too).
  void chunk_scores() {
    const int Cc = int(sd.Cc), F = L.F;
    const size_t CP = sd.CP;
    if constexpr (kFeature) {
      feature_gate_scores(P, Cc, phiq, s.Kt, s.g, s.A, s.Ks, s.QA, s.KsT, CP, s.Qb, s.Bv, n, F);
    } else {
      // P = (Q̂ K̃ᵀ) ⊙ M over the row tiles' blocks left of the diagonal (matmul_lower_c: full
      // tile height, a quarter fewer multiply-adds than the whole chunk), then 0 right of the
      // diagonal. The triangle in blocks of 4 rows did half the multiply-adds at a third of the rate.
      transpose(s.KtT, CP, s.Kt, size_t(F), n, F);
      matmul_lower_c(P, Cc, phiq, F, s.KtT, CP, n, F, n, T(1), false);
      T* mrow = s.mrow;
      for (int i = 0; i < n; ++i) {
        T* Pi = P + size_t(i) * Cc;
        if (c.gated || reset_inner) {  // ungated: M = 1 on the lower triangle (0 across a boundary)
          // Row i of M from row i-1: M_ij = exp(G_i - G_j) = prod_{r=j+1..i} g_r = M_{i-1,j} g_i.
          const T gi = s.g[i];
          RFA_OMP_SIMD_FULL  // (P_ii M_ii = P_ii: M_ii = 1)
          for (int j = 0; j < i; ++j) {
            mrow[j] *= gi;
            Pi[j] *= mrow[j];
          }
          mrow[i] = T(1);
        }
        zero_row(Pi + i + 1, n - i - 1);
      }
    }
  }

  // Y = P V' + (Q̂ ⊙ exp G) S_prev. V' ends in a column of ones and S_prev in the normaliser z,
  // so the last column of Y is the denominator: P's row sums plus (Q̂ ⊙ exp G) z. The products
  // take the Dh columns of v only (E = Dh + 1 columns would cost a whole register for the last
  // one: a fifth of their multiply-adds), the denominator is summed beside them. P is 0 right of
  // its diagonal: matmul_lower_a reads each row tile's keys up to its last row only.
  // Then out = num / max(den, eps_d).
  void chunk_outputs() {
    const int Cc = int(sd.Cc), Dh = d.Dh, F = L.F, E = L.E;
    const size_t EP = sd.EP;
    const T eps_d = T(c.eps_d);
    matmul_lower_a(s.Y, E, P, Cc, s.Vp, EP, n, n, Dh, T(1), false);
    for (int i = 0; i < n; ++i) s.Y[size_t(i) * E + Dh] = sum(P + size_t(i) * Cc, i + 1);
    if (!state_zero) {
      for (int i = 0; i < n; ++i) {
        const T* eG = s.eG + (kFeature ? size_t(i) * F : size_t(i));
        const T* q = phiq + size_t(i) * F;
        T* Qe = s.Qe + size_t(i) * F;
        RFA_OMP_SIMD_FULL
        for (int f = 0; f < F; ++f) Qe[f] = eG[kFeature ? f : 0] * q[f];
      }
      matmul(s.Y, E, s.Qe, F, s.S, EP, n, F, Dh, T(1), true);
      for (int f = 0; f < F; ++f) s.z[f] = s.S[f * EP + Dh];
      for (int i = 0; i < n; ++i) s.Y[size_t(i) * E + Dh] += dot(s.Qe + size_t(i) * F, s.z, F);
    }
    for (int i = 0; i < n; ++i) {
      const T* Yi = s.Y + size_t(i) * E;
      const T den = Yi[Dh];
      if (saved) saved[L.den + bht0 + i] = den;
      const T inv = T(1) / (den > eps_d ? den : eps_d);
      T* o = out + row_of(i);
      RFA_OMP_SIMD_FULL
      for (int e = 0; e < Dh; ++e) o[e] = Yi[e] * inv;
    }
  }

  // S_next = exp(G_n) ⊙ S_prev + (K̃ ⊙ exp(G_n - G))ᵀ V'; skipped after the last chunk unless asked for.
  void chunk_state_update(bool wanted) {
    if (!wanted) return;
    const int F = L.F, Dh = d.Dh;
    const size_t EP = sd.EP;
    T* z = s.z;  // (F) the normaliser's new part, sum_j k̃_j ⊙ w_j (v' ends in 1)
    std::fill_n(z, F, T(0));
    for (int j = 0; j < n; ++j) {
      const T* w = s.w + (kFeature ? size_t(j) * F : size_t(j));
      const T* Kt = s.Kt + size_t(j) * F;
      T* Kw = s.Kw + size_t(j) * F;
      RFA_OMP_SIMD_FULL
      for (int f = 0; f < F; ++f) {
        Kw[f] = Kt[f] * w[kFeature ? f : 0];
        z[f] += Kw[f];
      }
    }
    if (!state_zero)
      for (int f = 0; f < F; ++f) {
        const T decay = gate_at(s.eG, n - 1, f);
        RFA_OMP_SIMD_FULL
        for (size_t x = 0; x < EP; ++x) s.S[f * EP + x] *= decay;
      }
    // S (F, E) += Kwᵀ V': the products over v's Dh columns, the normaliser column from z.
    matmul_at(s.S, EP, s.Kw, F, s.Vp, EP, F, n, Dh, T(1), !state_zero);
    for (int f = 0; f < F; ++f) s.S[f * EP + Dh] = state_zero ? z[f] : s.S[f * EP + Dh] + z[f];
    state_zero = false;
  }

  void head_leave(T* state_out) {
    if (!state_out) return;
    const int F = L.F, E = L.E;
    const size_t EP = sd.EP, FE = static_cast<size_t>(F) * E;
    for (int f = 0; f < F; ++f) {
      if (state_zero) zero_row(state_out + bh * FE + size_t(f) * E, E);
      else copy_row(state_out + bh * FE + size_t(f) * E, s.S + f * EP, E);
    }
  }
};

template <typename T, bool kFeature>
void forward_heads(T* out, T* saved, Workspace<T> workspace, const RfaInputs<T>& in, const RfaParams<T>& p,
                   const RfaConfig& c, const AttentionDims& d, const T* state_in, T* state_out) {
  const RfaSavedLayout L = rfa_saved_layout(c, d);
  const RfaScratchDims sd = rfa_scratch_dims(c, d);
  const int H = d.H, Dh = d.Dh, C = d.C(), D = c.num_features;
  const int threads = thread_count();
  RFA_ASSERT(workspace.size >= rfa_workspace_size(c, d, threads), "rfa workspace {} < {}", workspace.size,
             rfa_workspace_size(c, d, threads));
  RFA_ASSERT(!c.gated || (in.n && p.gate_w && p.gate_b), "gated RFA needs n, gate_w and gate_b");
  RfaBackwardShared<T> shared;  // the forward uses its gate_a when nothing is saved
  T* thread_slices = workspace.data + shared.carve(workspace.data, c, d, threads);
  T* gate_a = nullptr;  // (B, T, H, W) every row's and head's gate pre-activations: one gemm
  if (c.gated) {
    gate_a = saved ? saved + L.gate_a : shared.gate_a;
    rfa_gate_preact(gate_a, in.n, p.gate_w, p.gate_b, int64_t(d.B) * d.T, H * rfa_gate_width(c), C);
  }

  for (int h = 0; h < H; ++h)
    feature_map_pack_forward(shared.W_heads + h * sd.W, p.W + static_cast<size_t>(h) * D * Dh, D, Dh);

  attention_tasks_run(int64_t(d.B) * H, thread_slices, rfa_thread_scratch_size(c, d), threads,
                      [&](int64_t bh, T* scratch) {
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H);
    RfaForwardScratch<T> sc;
    sc.carve(scratch, sd);
    sc.Wt = shared.W_heads + h * sd.W;
    RfaHeadForward<T, kFeature> hf{{c, d, L, sd, b, h, bh}, in, out, saved, gate_a,
                                   p.sigma + static_cast<size_t>(h) * Dh, sc};
    hf.head_enter(state_in);
    for (int ci = 0; ci < L.n_chunks; ++ci) {
      hf.chunk_enter(ci);
      hf.chunk_rows();
      hf.chunk_gates();
      hf.chunk_features();
      hf.chunk_scores();
      hf.chunk_outputs();
      hf.chunk_state_update(ci + 1 < L.n_chunks || state_out);
    }
    hf.head_leave(state_out);
  });
}

}  // namespace

template <typename T>
void rfa_forward(T* out, T* saved, Workspace<T> workspace, const RfaInputs<T>& in, const RfaParams<T>& p,
                 const RfaConfig& c, const AttentionDims& d, const T* state_in, T* state_out) {
  if (c.feature_gate) forward_heads<T, true>(out, saved, workspace, in, p, c, d, state_in, state_out);
  else forward_heads<T, false>(out, saved, workspace, in, p, c, d, state_in, state_out);
}

#define RFA_INSTANTIATE(T)                                                                             \
  template void rfa_forward<T>(T*, T*, Workspace<T>, const RfaInputs<T>&, const RfaParams<T>&,       \
                               const RfaConfig&, const AttentionDims&, const T*, T*);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
