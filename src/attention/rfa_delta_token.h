#pragma once
// Internal: one token of the gated delta rule on one head's state, forward and backward, the
// kernels every form shares (the chunked training form and the decoding step run the forward on
// S (F, Dh); the backward recomputes and runs back on Sᵀ (Dh, F)). The math: rfa_delta.h,
// docs/delta-rule.md section 2. Two passes over the state each way (in L1: F Dh elements, 8 KB
// at F = 64, Dh = 32 in fp32).
#include <algorithm>

#include "kernels/vector_math.h"

namespace rfa {

// S <- alpha S;  e = v - Sᵀ k;  u = beta e;  S <- S + k uᵀ;  out = Sᵀ q (when out is not null).
// e, u: (Dh) written (the backward keeps them per token).
template <typename T>
inline void rfa_delta_token_forward(T* S, T* e, T* u, T* out, const T* k, const T* q, const T* v, T alpha, T beta,
                                    int F, int Dh) {
  // Rows of S go four at a time into each sum over f (e, out): one dependent add per four rows
  // instead of one per row (a chain of F dependent multiply-adds ran at the add latency).
  const size_t ld = static_cast<size_t>(Dh);
  std::fill(e, e + Dh, T(0));
  int f = 0;
  for (; f + 4 <= F; f += 4) {  // pass 1: the decay and the recall r = S'ᵀ k (in e)
    T *S0 = S + f * ld, *S1 = S0 + ld, *S2 = S1 + ld, *S3 = S2 + ld;
    const T k0 = k[f], k1 = k[f + 1], k2 = k[f + 2], k3 = k[f + 3];
#pragma omp simd
    for (int x = 0; x < Dh; ++x) {
      const T s0 = S0[x] * alpha, s1 = S1[x] * alpha, s2 = S2[x] * alpha, s3 = S3[x] * alpha;
      S0[x] = s0, S1[x] = s1, S2[x] = s2, S3[x] = s3;
      e[x] += (k0 * s0 + k1 * s1) + (k2 * s2 + k3 * s3);
    }
  }
  for (; f < F; ++f) {
    T* Sf = S + f * ld;
    const T kf = k[f];
#pragma omp simd
    for (int x = 0; x < Dh; ++x) {
      Sf[x] *= alpha;
      e[x] += kf * Sf[x];
    }
  }
#pragma omp simd
  for (int x = 0; x < Dh; ++x) {
    e[x] = v[x] - e[x];
    u[x] = beta * e[x];
  }
  if (!out) {  // the backward's recomputation: the write only
    for (int g = 0; g < F; ++g) {
      T* Sf = S + g * ld;
      const T kf = k[g];
#pragma omp simd
      for (int x = 0; x < Dh; ++x) Sf[x] += kf * u[x];
    }
    return;
  }
  std::fill(out, out + Dh, T(0));
  f = 0;
  for (; f + 4 <= F; f += 4) {  // pass 2: the rank-1 write and the read
    T *S0 = S + f * ld, *S1 = S0 + ld, *S2 = S1 + ld, *S3 = S2 + ld;
    const T k0 = k[f], k1 = k[f + 1], k2 = k[f + 2], k3 = k[f + 3];
    const T q0 = q[f], q1 = q[f + 1], q2 = q[f + 2], q3 = q[f + 3];
#pragma omp simd
    for (int x = 0; x < Dh; ++x) {
      const T s0 = S0[x] + k0 * u[x], s1 = S1[x] + k1 * u[x], s2 = S2[x] + k2 * u[x], s3 = S3[x] + k3 * u[x];
      S0[x] = s0, S1[x] = s1, S2[x] = s2, S3[x] = s3;
      out[x] += (q0 * s0 + q1 * s1) + (q2 * s2 + q3 * s3);
    }
  }
  for (; f < F; ++f) {
    T* Sf = S + f * ld;
    const T kf = k[f], qf = q[f];
#pragma omp simd
    for (int x = 0; x < Dh; ++x) {
      Sf[x] += kf * u[x];
      out[x] += qf * Sf[x];
    }
  }
}

// What one token's backward writes.
template <typename T>
struct RfaDeltaTokenGrads {
  T* dq;      // (F)  d phi(q), overwritten
  T* dk;      // (F)  d phi(k), overwritten
  T* dv;      // (Dh) overwritten
  T dalpha = 0, dbeta = 0;
};

// The backward works on the transpose, Sᵀ (Dh, F) (row x: what value x reads from every
// feature): there every product it needs but one is an update of a whole row (F long), where
// in S (F, Dh) three of them were a dot product per row of S, each ending in a horizontal sum.
// The forward (above) keeps S (F, Dh), where it needs none.

// The backward's recomputation of one token on St = Sᵀ (Dh, F), state entering -> leaving:
//   row x: s = alpha St_x;  e_x = v_x - s·k;  u_x = beta e_x;  St_x = s + u_x k
template <typename T>
inline void rfa_delta_token_recompute_t(T* St, T* e, T* u, const T* k, const T* v, T alpha, T beta, int F, int Dh) {
  for (int x = 0; x < Dh; ++x) {
    T* row = St + static_cast<size_t>(x) * F;
    T r = T(0);
#pragma omp simd reduction(+ : r)
    for (int f = 0; f < F; ++f) {
      row[f] *= alpha;
      r += row[f] * k[f];
    }
    e[x] = v[x] - r;
    u[x] = beta * e[x];
    const T ux = u[x];
#pragma omp simd
    for (int f = 0; f < F; ++f) row[f] += ux * k[f];
  }
}

// Back through one token on the transposes. St0 = S_{t-1}ᵀ (Dh, F), before the decay; dSt (Dh, F):
// on entry the gradient of S_tᵀ from the tokens after it, on exit that of S_{t-1}ᵀ. e, u: the
// forward's; dout (Dh). scratch: du, dr (Dh), dav (F).
//   dS_t += q doutᵀ;  dq = S_t dout = alpha S0 dout + k (u·dout)
//   du = dS_tᵀ k,  dk = dS_t u;  dbeta = du·e,  dv = beta du,  dr = -beta du
//   dS' = dS_t + k drᵀ,  dk += S' dr = alpha S0 dr,  dalpha = <dS', S0>,  dS_{t-1} = alpha dS'
// In rows x of the transposes: dSt_x += dout_x q, du_x = dSt_x·k (the one dot product a row),
// dk += u_x dSt_x, dq += alpha dout_x St0_x; then dk += alpha dr_x St0_x, dav += dS't_x ⊙ St0_x.
template <typename T>
inline void rfa_delta_token_backward(RfaDeltaTokenGrads<T>& g, T* dSt, T* du, T* dr, T* dav, const T* St0,
                                     const T* e, const T* u, const T* dout, const T* k, const T* q, T alpha, T beta,
                                     int F, int Dh) {
  const T udo = dot(u, dout, Dh);
  T *dq = g.dq, *dk = g.dk;
#pragma omp simd
  for (int f = 0; f < F; ++f) {
    dq[f] = k[f] * udo;
    dk[f] = T(0);
    dav[f] = T(0);
  }
  for (int x = 0; x < Dh; ++x) {  // pass A: dS_t, du, dk's first part, dq
    T* a = dSt + static_cast<size_t>(x) * F;
    const T* s0 = St0 + static_cast<size_t>(x) * F;
    const T dox = dout[x], ux = u[x], ado = alpha * dout[x];
    T dux = T(0);
#pragma omp simd reduction(+ : dux)
    for (int f = 0; f < F; ++f) {
      a[f] += dox * q[f];
      dux += a[f] * k[f];
      dk[f] += ux * a[f];
      dq[f] += ado * s0[f];
    }
    du[x] = dux;
  }
  g.dbeta = dot(du, e, Dh);
#pragma omp simd
  for (int x = 0; x < Dh; ++x) {
    g.dv[x] = beta * du[x];
    dr[x] = -beta * du[x];
  }
  for (int x = 0; x < Dh; ++x) {  // pass B: dS', dk's second part, dalpha, dS_{t-1}
    T* a = dSt + static_cast<size_t>(x) * F;
    const T* s0 = St0 + static_cast<size_t>(x) * F;
    const T drx = dr[x], adr = alpha * dr[x];
#pragma omp simd
    for (int f = 0; f < F; ++f) {
      const T dSp = a[f] + drx * k[f];
      dk[f] += adr * s0[f];
      dav[f] += dSp * s0[f];
      a[f] = alpha * dSp;
    }
  }
  g.dalpha = row_sum(dav, F);
}

}  // namespace rfa
