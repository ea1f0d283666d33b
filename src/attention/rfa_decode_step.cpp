// The fused RFA decode step: same math and state as the reference
// rfa_step_reference (rfa_recurrent.cpp), which the tests compare it against,
// in one pass over S. Design section 2.
#include <algorithm>
#include <cmath>

#include "attention/feature_map.h"
#include "attention/rfa_layout.h"
#include "attention/rfa_recurrent.h"
#include "kernels/vector_math.h"
#include "core/error.h"
#include "core/parallel.h"

namespace rfa {
namespace {

// uq, uk (D each) = sum_j sxq[j] Wt[j, :] and sum_j sxk[j] Wt[j, :] over the Dh rows of Wt
// (Dh, D), NB registers of columns at a time from column block `at`: the q row's and the k
// row's accumulators side by side in registers. One row alone is a chain of Dh dependent
// multiply-adds per register (4x128: 32 of them on each of 2 registers natively), bound by
// the multiply-add's latency; the pair puts twice the chains in flight and reads each Wt row
// once for both. Each sum adds in the same order as the plain loop in project_pair.
template <typename T, int NB>
void project_pair_block(T* uq, T* uk, const T* sxq, const T* sxk, const T* Wt, int D, int Dh, int at) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  V aq[NB], ak[NB];
  for (int v = 0; v < NB; ++v) aq[v] = ak[v] = V{};
  for (int j = 0; j < Dh; ++j) {
    const T* w = Wt + static_cast<size_t>(j) * D + at;
    const T a = sxq[j], b = sxk[j];
    for (int v = 0; v < NB; ++v) {
      const V wv = simd_load(w + v * W);
      aq[v] += a * wv;
      ak[v] += b * wv;
    }
  }
  for (int v = 0; v < NB; ++v) {
    simd_store(uq + at + v * W, aq[v]);
    simd_store(uk + at + v * W, ak[v]);
  }
}

// D = NV registers in blocks of at most NB, 2 NB accumulators leaving a quarter of the
// register file for Wt's row and the two broadcasts (AVX-512: 8 registers of columns at a
// time, 16 accumulators; AVX2: 4, 8).
template <typename T, int NV>
void project_pair_in_registers(T* uq, T* uk, const T* sxq, const T* sxk, const T* Wt, int D, int Dh) {
  constexpr int NB = std::min(NV, kVectorRegisters * 3 / 8);
  constexpr int W = Simd<T>::W;
  int v = 0;
  for (; v + NB <= NV; v += NB) project_pair_block<T, NB>(uq, uk, sxq, sxk, Wt, D, Dh, v * W);
  if constexpr (NV % NB != 0) project_pair_block<T, NV % NB>(uq, uk, sxq, sxk, Wt, D, Dh, v * W);
}

template <typename T>
void project_pair(T* uq, T* uk, const T* sxq, const T* sxk, const T* Wt, int D, int Dh) {
  constexpr int W = Simd<T>::W;
  if (D % W == 0) switch (D / W) {
      case 1: return project_pair_in_registers<T, 1>(uq, uk, sxq, sxk, Wt, D, Dh);
      case 2: return project_pair_in_registers<T, 2>(uq, uk, sxq, sxk, Wt, D, Dh);
      case 4: return project_pair_in_registers<T, 4>(uq, uk, sxq, sxk, Wt, D, Dh);
      case 8: return project_pair_in_registers<T, 8>(uq, uk, sxq, sxk, Wt, D, Dh);
      default: break;
    }
  std::fill(uq, uq + D, T(0));
  std::fill(uk, uk + D, T(0));
  for (int j = 0; j < Dh; ++j) {
    const T* w = Wt + static_cast<size_t>(j) * D;
    const T a = sxq[j], b = sxk[j];
#pragma omp simd
    for (int i = 0; i < D; ++i) {
      uq[i] += a * w[i];
      uk[i] += b * w[i];
    }
  }
}

// phi (F) from u (D): sin/cos (each scaled after) or relu, times 1/sqrt(D).
template <typename T>
void feature_from_u(T* phi, const T* u, const RfaConfig& c, int D) {
  const T scale = T(1) / std::sqrt(T(D));
  if (c.feature_map == FeatureMapKind::gaussian) {
    sincos_row(phi, phi + D, u, D);
#pragma omp simd
    for (int i = 0; i < 2 * D; ++i) phi[i] *= scale;
  } else {
#pragma omp simd
    for (int i = 0; i < D; ++i) phi[i] = u[i] > T(0) ? u[i] * scale : T(0);
  }
}

// phi_q and phi_k (F each) of one (b, h)'s rows q and k (Dh): x̄ = x / sqrt(|x|² + eps_n),
// u = W (sigma ⊙ x̄), then sin/cos or relu; the two rows side by side at each stage, so the
// latency of one (the norm's sum, root and division, the projection's chains) overlaps the
// other's. Wt: (Dh, D). sx: (2 Dh) scratch, u: (2 D) scratch.
template <typename T>
void feature_rows_qk(T* phiq, T* phik, T* sx, T* u, const T* q, const T* k, const T* sigma, const T* Wt,
                     const RfaConfig& c, int D, int Dh) {
  const T sq = row_sum_squares(q, Dh), sk = row_sum_squares(k, Dh);
  const T rq = l2_inverse_norm(sq, T(c.eps_n)), rk = l2_inverse_norm(sk, T(c.eps_n));
  T *sxq = sx, *sxk = sx + Dh, *uq = u, *uk = u + D;
#pragma omp simd
  for (int j = 0; j < Dh; ++j) {
    sxq[j] = sigma[j] * (q[j] * rq);
    sxk[j] = sigma[j] * (k[j] * rk);
  }
  project_pair(uq, uk, sxq, sxk, Wt, D, Dh);
  feature_from_u(phiq, uq, c, D);
  feature_from_u(phik, uk, c, D);
}

// A state pass's gate: row f of S decays by gate(f) and takes key(f) v'. The scalar gate: g and
// beta phi_k[f] for every row (one sigmoid pair a (row, head)); the feature gate: row f's own
// g_f and delta beta_f phi_k[f], computed before the pass.
template <typename T>
struct ScalarGate {
  T g, beta;
  const T* phik;
  T gate(int) const { return g; }
  T key(int f) const { return beta * phik[f]; }
};
template <typename T>
struct FeatureGate {
  const T* g;  // (F)
  const T* k;  // (F)
  T gate(int f) const { return g[f]; }
  T key(int f) const { return k[f]; }
};

// The pass over one head's state S (F, E), E = Dh + 1, row f updated in place:
//   S_f = gate(f) S_f + key(f) v',   y = sum_f phi_q[f] S_f   (y: E).
// The E columns go as NV registers plus a scalar tail, and y's accumulators stay in
// registers for the whole pass: one load and one store of S per element, nothing else
// touches memory. kTail: the tail's length when known here, 0 or 1 (1: Dh a multiple of
// the width, the denominator's column alone), so that its accumulator is a register too;
// -1: any length (0 .. W-1), its accumulators then an array in memory, each row's sum a
// store and a load after the last row's (a store-forwarding chain through the whole pass:
// with every tail counted at run time, that store held 44% of the pass's samples at 4x128
// and 64 decoding rows; with it in a register they sit on the loads and stores of S; the
// feature gate's pass, a plain loop storing y every row, had 41% of its kernel's samples on
// its two stores, of S and of y, before it came here too).
template <typename T, int NV, int kTail, typename Gate>
void gate_pass(T* S, T* y, const T* vp, const T* phiq, const Gate& gate, int F, int E) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  constexpr int kTailMax = kTail >= 0 ? std::max(kTail, 1) : W;
  V vv[NV], acc[NV];
  for (int v = 0; v < NV; ++v) {
    vv[v] = simd_load(vp + v * W);
    acc[v] = V{};
  }
  const int tail = kTail >= 0 ? kTail : E - NV * W;  // 0 .. W-1
  T tail_acc[kTailMax] = {};
  for (int f = 0; f < F; ++f) {
    T* Sf = S + static_cast<size_t>(f) * E;
    const T g = gate.gate(f), kf = gate.key(f), qf = phiq[f];
    for (int v = 0; v < NV; ++v) {
      const V s = g * V(simd_load(Sf + v * W)) + kf * vv[v];
      simd_store(Sf + v * W, s);
      acc[v] += qf * s;
    }
    for (int e = 0; e < tail; ++e) {
      const int i = NV * W + e;
      const T s = g * Sf[i] + kf * vp[i];
      Sf[i] = s;
      tail_acc[e] += qf * s;
    }
  }
  for (int v = 0; v < NV; ++v) simd_store(y + v * W, acc[v]);
  for (int e = 0; e < tail; ++e) y[NV * W + e] = tail_acc[e];
}

// The same pass for any E (a plain loop; y accumulated in memory).
template <typename T, typename Gate>
void gate_pass_any(T* S, T* y, const T* vp, const T* phiq, const Gate& gate, int F, int E) {
  std::fill(y, y + E, T(0));
  for (int f = 0; f < F; ++f) {
    T* Sf = S + static_cast<size_t>(f) * E;
    const T g = gate.gate(f), kf = gate.key(f), qf = phiq[f];
#pragma omp simd
    for (int e = 0; e < E; ++e) {
      const T s = g * Sf[e] + kf * vp[e];
      Sf[e] = s;
      y[e] += qf * s;
    }
  }
}

// gate_pass with its tail's length fixed where it is 0 or 1 (see there).
template <typename T, int NV, typename Gate>
void gate_pass_nv(T* S, T* y, const T* vp, const T* phiq, const Gate& gate, int F, int E) {
  switch (E - NV * Simd<T>::W) {
    case 0: return gate_pass<T, NV, 0>(S, y, vp, phiq, gate, F, E);
    case 1: return gate_pass<T, NV, 1>(S, y, vp, phiq, gate, F, E);
    default: return gate_pass<T, NV, -1>(S, y, vp, phiq, gate, F, E);
  }
}

template <typename T, typename Gate>
void gate_state_pass(T* S, T* y, const T* vp, const T* phiq, const Gate& gate, int F, int E) {
  switch (E / Simd<T>::W) {  // the registers E fills; up to 8 (Dh 127 at 16 lanes, 63 at 8)
    case 1: return gate_pass_nv<T, 1>(S, y, vp, phiq, gate, F, E);
    case 2: return gate_pass_nv<T, 2>(S, y, vp, phiq, gate, F, E);
    case 3: return gate_pass_nv<T, 3>(S, y, vp, phiq, gate, F, E);
    case 4: return gate_pass_nv<T, 4>(S, y, vp, phiq, gate, F, E);
    case 5: return gate_pass_nv<T, 5>(S, y, vp, phiq, gate, F, E);
    case 6: return gate_pass_nv<T, 6>(S, y, vp, phiq, gate, F, E);
    case 7: return gate_pass_nv<T, 7>(S, y, vp, phiq, gate, F, E);
    case 8: return gate_pass_nv<T, 8>(S, y, vp, phiq, gate, F, E);
    default: return gate_pass_any(S, y, vp, phiq, gate, F, E);
  }
}

// The feature gate's pre-activations of R listed rows for G gate rows from hf0: out_r[g] =
// gate_w[hf0 + g, :] · n_r + gate_b[hf0 + g], each sum a vector of partial sums over C (lanes
// c mod W, c ascending), folded by simd_sum, then the tail's products in order: the same
// arithmetic whatever R and G, so a row's values do not depend on the rows beside it. The R G
// accumulators stay in registers; each gate row's registers are read once for the R rows (one row
// at a time, every (row, head) read its head's (F, C) gate weights again: 32 KiB at 4x128).
template <typename T, int R, int G>
void gate_preact_block(T* const out[R], const T* const n[R], const T* gate_w, const T* gate_b, int hf0, int C) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  V acc[R][G];
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) acc[r][g] = V{};
  const T* w = gate_w + static_cast<size_t>(hf0) * C;
  int c = 0;
  for (; c + W <= C; c += W) {
    V wv[G];
    for (int g = 0; g < G; ++g) wv[g] = simd_load(w + static_cast<size_t>(g) * C + c);
    for (int r = 0; r < R; ++r) {
      const V nv = simd_load(n[r] + c);
      for (int g = 0; g < G; ++g) acc[r][g] += wv[g] * nv;
    }
  }
  for (int r = 0; r < R; ++r)
    for (int g = 0; g < G; ++g) {
      const T* wg = w + static_cast<size_t>(g) * C;
      T sum = simd_sum<T>(acc[r][g]);
      for (int e = c; e < C; ++e) sum += wg[e] * n[r][e];
      out[r][g] = sum + gate_b[hf0 + g];
    }
}

// R rows' pre-activations for every head's F gate rows, into each (row, head)'s fbeta scratch
// (fbeta_of(r, h): its F entries).
template <typename T, int R, typename FbetaOf>
void gate_preact_rows(const FbetaOf& fbeta_of, const T* const n[R], const T* gate_w, const T* gate_b, int H, int F,
                      int C) {
  constexpr int G = 4;
  T* out[R];
  for (int h = 0; h < H; ++h) {
    int f = 0;
    for (; f + G <= F; f += G) {
      for (int r = 0; r < R; ++r) out[r] = fbeta_of(r, h) + f;
      gate_preact_block<T, R, G>(out, n, gate_w, gate_b, h * F + f, C);
    }
    for (; f < F; ++f) {
      for (int r = 0; r < R; ++r) out[r] = fbeta_of(r, h) + f;
      gate_preact_block<T, R, 1>(out, n, gate_w, gate_b, h * F + f, C);
    }
  }
}

}  // namespace

template <typename T>
void rfa_random_transpose(T* Wt, const T* W, int H, int D, int Dh) {
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < Dh; ++j)
        Wt[(static_cast<size_t>(h) * Dh + j) * D + i] = W[(static_cast<size_t>(h) * D + i) * Dh + j];
}

template <typename T>
void rfa_decode_step(T* out, const RfaStateView<T>& st, const RfaInputs<T>& in, const RfaParams<T>& p, const T* Wt,
                     const RfaConfig& c, const AttentionRows& rows) {
  const int H = st.H, Dh = st.Dh, C = H * Dh, D = c.num_features, F = st.F, E = Dh + 1;
  RFA_ASSERT(F == rfa_feature_count(c), "state made for {} features, config has {}", F, rfa_feature_count(c));
  RFA_ASSERT(!c.gated || (in.n && p.gate_w && p.gate_b), "gated RFA needs n, gate_w and gate_b");
  RFA_ASSERT(rows.n <= st.B, "{} rows stepped in a state of {}", rows.n, st.B);
  // The state's scratch holds 2 Dh + 2 D + 4F + 2E per (b, h) (rfa_step_scratch_size).
  const size_t per_task = rfa_step_scratch_size(c, Dh);
  const T eps_d = T(c.eps_d);
  const size_t FE = static_cast<size_t>(F) * E;
  // Where the (row, head)'s scratch keeps what (the layout of rfa_step_scratch_size).
  const size_t fbeta_at = 2 * size_t(Dh) + 2 * size_t(D) + 3 * size_t(F) + 2 * size_t(E);
  auto scratch_of = [&](int b, int h) { return st.scratch + (int64_t(rows.state_row(b)) * H + h) * per_task; };
  if (c.feature_gate) {
    // The gate's pre-activations first, kRows listed rows at a time (each reads the layer's (H F, C)
    // gate weights once for all of them), into the rows' fbeta. kRows: R rows of G = 4 gate rows
    // keep R G accumulators, G weight registers and a row's in the register file.
    constexpr int kRows = kVectorRegisters >= 32 ? 4 : 2;
    const int blocks = (rows.n + kRows - 1) / kRows;
    parallel_for(blocks, parallel_grain(2 * int64_t(kRows) * H * F * C), [&](int64_t block) {
      const int b0 = static_cast<int>(block) * kRows, count = std::min(kRows, rows.n - b0);
      const T* n[kRows];
      for (int r = 0; r < count; ++r) n[r] = in.n + static_cast<size_t>(b0 + r) * C;
      if (count == kRows) {
        auto fbeta_of = [&](int r, int h) { return scratch_of(b0 + r, h) + fbeta_at; };
        gate_preact_rows<T, kRows>(fbeta_of, n, p.gate_w, p.gate_b, H, F, C);
      } else {  // the last rows one at a time (the same sums)
        for (int r = 0; r < count; ++r) {
          auto fbeta_of = [&](int, int h) { return scratch_of(b0 + r, h) + fbeta_at; };
          gate_preact_rows<T, 1>(fbeta_of, n + r, p.gate_w, p.gate_b, H, F, C);
        }
      }
    });
  }
  // Work per (b, h): two feature maps (2 D Dh) and one pass over the state (2 F E).
  const int64_t work = 2 * int64_t(D) * Dh + 2 * int64_t(F) * E;
  parallel_for(int64_t(rows.n) * H, parallel_grain(work), [&](int64_t bh) {
    // Input row b (of the step's rows) moves state row sb; the scratch is the state row's, so
    // that threads stepping disjoint parts of one step's rows (attention_step_part) never share it.
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H), sb = rows.state_row(b);
    const int64_t pos = rows.pos[b];
    T* at = scratch_of(b, h);
    T* sx = at;         // (2 Dh)
    T* u = sx + 2 * Dh;  // (2 D)
    T* phiq = u + 2 * D;
    T* phik = phiq + F;
    T* vp = phik + F;
    T* y = vp + E;
    T* fg = y + E;      // feature gate: g (F)
    T* fbeta = fg + F;  // feature gate: beta (F)
    const size_t row = static_cast<size_t>(b) * C + static_cast<size_t>(h) * Dh;
    const T* sigma = p.sigma + static_cast<size_t>(h) * Dh;
    const T* W = Wt + static_cast<size_t>(h) * Dh * D;  // (Dh, D)
    feature_rows_qk(phiq, phik, sx, u, in.q + row, in.k + row, sigma, W, c, D, Dh);
    T g = T(1), beta = T(1);  // ungated: no decay
    if (c.gated && !c.feature_gate)
      gate_sigmoids(row_dot(p.gate_w + static_cast<size_t>(h) * C, in.n + static_cast<size_t>(b) * C, C) + p.gate_b[h],
                    g, beta);
    std::copy(in.v + row, in.v + row + Dh, vp);
    vp[Dh] = T(1);
    T* S = st.S + (int64_t(sb) * H + h) * FE;  // (F, E)
    if (c.feature_gate) {
      // a = gate_w[h] n + gate_b[h] (in fbeta from the pass above), g = sigmoid(a), beta =
      // sigmoid(-a); S = diag(g) S + (delta beta ⊙ phi(k)) v'ᵀ: fg becomes g, fbeta the keys'
      // scale delta beta ⊙ phi(k).
      for (int f = 0; f < F; ++f) fg[f] = -fbeta[f];
      exp_row(fg, F);
      exp_row(fbeta, F);
      const T delta = rfa_discount<T>(c, pos);
      for (int f = 0; f < F; ++f) {
        fg[f] = T(1) / (T(1) + fg[f]);
        fbeta[f] = delta * phik[f] / (T(1) + fbeta[f]);
      }
      gate_state_pass(S, y, vp, phiq, FeatureGate<T>{fg, fbeta}, F, E);
    } else {
      if (c.time_discount) beta *= rfa_discount<T>(c, pos);
      gate_state_pass(S, y, vp, phiq, ScalarGate<T>{g, beta, phik}, F, E);
    }
    const T inv = T(1) / (y[Dh] > eps_d ? y[Dh] : eps_d);
    for (int e = 0; e < Dh; ++e) out[row + e] = y[e] * inv;
  });
}

#define RFA_INSTANTIATE(T)                                                                            \
  template void rfa_decode_step<T>(T*, const RfaStateView<T>&, const RfaInputs<T>&, const RfaParams<T>&,    \
                                   const T*, const RfaConfig&, const AttentionRows&);                 \
  template void rfa_random_transpose<T>(T*, const T*, int, int, int);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
