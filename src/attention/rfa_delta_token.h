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
  std::fill(e, e + Dh, T(0));
  for (int f = 0; f < F; ++f) {  // pass 1: the decay and the recall r = S'ᵀ k (in e)
    T* Sf = S + static_cast<size_t>(f) * Dh;
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
  if (out) std::fill(out, out + Dh, T(0));
  for (int f = 0; f < F; ++f) {  // pass 2: the rank-1 write and the read
    T* Sf = S + static_cast<size_t>(f) * Dh;
    const T kf = k[f];
    if (out) {
      const T qf = q[f];
#pragma omp simd
      for (int x = 0; x < Dh; ++x) {
        Sf[x] += kf * u[x];
        out[x] += qf * Sf[x];
      }
    } else {
#pragma omp simd
      for (int x = 0; x < Dh; ++x) Sf[x] += kf * u[x];
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
  for (int f = 0; f < F; ++f) {  // pass A: dS_t, du, dk's first part, dq
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
  for (int f = 0; f < F; ++f) {  // pass B: dS', dk's second part, dalpha, dS_{t-1}
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
