#pragma once
// Internal: one token of the gated delta rule on one head's state S (F, Dh), forward and
// backward, the kernels every form shares (the chunked training form, its backward's
// recomputation, the decoding step). The math: rfa_delta.h, docs/delta-rule.md section 2.
// Two passes over S each way, every inner loop over the Dh values of one row of S (in L1:
// F Dh elements, 8 KB at F = 64, Dh = 32 in fp32).
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

// Back through one token. S0: the state before it (before the decay); dS (F, Dh): on entry the
// gradient of S_t from the tokens after it, on exit that of S_{t-1}. e, u: the forward's;
// dout (Dh). scratch: du, dr (Dh each).
//   dS_t += q doutᵀ;  dq = S_t dout = alpha S0 dout + k (u·dout)
//   du = dS_tᵀ k,  dk = dS_t u;  dbeta = du·e,  dv = beta du,  dr = -beta du
//   dS' = dS_t + k drᵀ,  dk += S' dr = alpha S0 dr,  dalpha = <dS', S0>,  dS_{t-1} = alpha dS'
template <typename T>
inline void rfa_delta_token_backward(RfaDeltaTokenGrads<T>& g, T* dS, T* du, T* dr, const T* S0, const T* e,
                                     const T* u, const T* dout, const T* k, const T* q, T alpha, T beta, int F,
                                     int Dh) {
  const T udo = dot(u, dout, Dh);
  std::fill(du, du + Dh, T(0));
  int f = 0;
  for (; f + 2 <= F; f += 2) {  // pass A, two rows at a time (du's sum over f: half the dependent adds)
    T* dS0 = dS + static_cast<size_t>(f) * Dh;
    T* dS1 = dS0 + Dh;
    const T* S00 = S0 + static_cast<size_t>(f) * Dh;
    const T* S01 = S00 + Dh;
    const T q0 = q[f], q1 = q[f + 1], k0 = k[f], k1 = k[f + 1];
    T dku0 = T(0), dku1 = T(0), sdo0 = T(0), sdo1 = T(0);
#pragma omp simd reduction(+ : dku0, dku1, sdo0, sdo1)
    for (int x = 0; x < Dh; ++x) {
      const T a0 = dS0[x] + q0 * dout[x], a1 = dS1[x] + q1 * dout[x];
      dS0[x] = a0, dS1[x] = a1;
      du[x] += k0 * a0 + k1 * a1;
      dku0 += a0 * u[x], dku1 += a1 * u[x];
      sdo0 += S00[x] * dout[x], sdo1 += S01[x] * dout[x];
    }
    g.dk[f] = dku0, g.dk[f + 1] = dku1;
    g.dq[f] = alpha * sdo0 + k0 * udo, g.dq[f + 1] = alpha * sdo1 + k1 * udo;
  }
  for (; f < F; ++f) {  // pass A: dS_t, du, dk's first part, dq
    T* dSf = dS + static_cast<size_t>(f) * Dh;
    const T* S0f = S0 + static_cast<size_t>(f) * Dh;
    const T qf = q[f], kf = k[f];
    T dku = T(0), sdo = T(0);
#pragma omp simd reduction(+ : dku, sdo)
    for (int x = 0; x < Dh; ++x) {
      dSf[x] += qf * dout[x];
      du[x] += kf * dSf[x];
      dku += dSf[x] * u[x];
      sdo += S0f[x] * dout[x];
    }
    g.dk[f] = dku;
    g.dq[f] = alpha * sdo + kf * udo;
  }
  g.dbeta = dot(du, e, Dh);
#pragma omp simd
  for (int x = 0; x < Dh; ++x) {
    g.dv[x] = beta * du[x];
    dr[x] = -beta * du[x];
  }
  T dalpha = T(0);
  for (f = 0; f < F; ++f) {  // pass B: dS', dk's second part, dalpha, dS_{t-1}
    T* dSf = dS + static_cast<size_t>(f) * Dh;
    const T* S0f = S0 + static_cast<size_t>(f) * Dh;
    const T kf = k[f];
    T sdr = T(0), da = T(0);
#pragma omp simd reduction(+ : sdr, da)
    for (int x = 0; x < Dh; ++x) {
      const T dSp = dSf[x] + kf * dr[x];
      sdr += S0f[x] * dr[x];
      da += dSp * S0f[x];
      dSf[x] = alpha * dSp;
    }
    g.dk[f] += alpha * sdr;
    dalpha += da;
  }
  g.dalpha = dalpha;
}

}  // namespace rfa
