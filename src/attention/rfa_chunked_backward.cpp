// RFA chunked backward, design section 4: a reverse pass over chunks carrying
// dS (the gradient of the state leaving the chunk), with the chunk-entry states,
// features and masked scores P the forward saved. Per chunk (notation of
// rfa_chunked_forward.cpp):
//   Y = P V' + diag(eG) Q̂ S_prev,  P = (Q̂ K̃ᵀ) ⊙ M,  S_next = e^{G_C} S_prev + (K̃ ⊙ e^{G_C-G})ᵀ V'
//   dP = dY V'ᵀ (lower),  dA = dP ⊙ M
//   dQ̂ = dA K̃ + diag(eG) dY S_prevᵀ
//   dK̃ = dAᵀ Q̂ + diag(e^{G_C-G}) V' dSᵀ
//   dV' = Pᵀ dY + diag(e^{G_C-G}) K̃ dS
//   dS_prev = e^{G_C} dS + (Q̂ ⊙ eG)ᵀ dY
// The log-gates enter only through differences G_t - G_s paired with q̂_t·k̃_s (and
// e^{G_t} q̂_t), so dG_t = q̂_t·dq̂_t - k̃_t·dk̃_t with the full dq̂, dk̃, and
// dlambda_r = sum_{t>=r} dG_t: a running sum in this reverse pass. Then
//   da = beta dlambda - g (dk̃·k̃),  dphi(k) = beta dk̃, and the feature maps' backward.
#include <algorithm>
#include <cmath>

#include "attention/attention_tasks.h"
#include "attention/feature_map.h"
#include "attention/rfa_attention.h"
#include "attention/rfa_layout.h"
#include "attention/vector_math.h"
#include "core/error.h"

namespace rfa {
namespace {

template <typename T>
bool all_zero(const T* x, size_t n) {
  bool nonzero = false;  // no early exit: the loop vectorises
  for (size_t i = 0; i < n; ++i) nonzero |= x[i] != T(0);
  return !nonzero;
}

// The gate's gradients once every (b, h) has its da (B,H,T), split over the B*T
// token rows (a split over batch rows would leave threads idle at B = 1, the
// long-context shape):
//   a = gate_w[h]·n_t + gate_b[h]:  dn_t = sum_h da gate_w[h] (head 0 overwrites: no zeroing);
//   dgate_w[h] += sum da n_t;  dgate_b[h] += sum da
// dgate goes to each thread's partial sums (threads, H, C+1): [dgate_w[h], dgate_b[h]] rows.
template <typename T>
void gate_backward(T* dn, T* parts, const T* da, const T* n, const T* gate_w, const AttentionDims& d,
                   int max_threads) {
  const int Tn = d.T, H = d.H, C = d.C();
  const int64_t N = int64_t(d.B) * Tn;
  parallel_region([&](int thread, int threads) {
    RFA_ASSERT(thread < max_threads, "thread {} but gate partials sized for {} threads", thread, max_threads);
    T* partial = parts + static_cast<size_t>(thread) * H * (C + 1);
    for (int64_t bt = N * thread / threads; bt < N * (thread + 1) / threads; ++bt) {
      const int64_t b = bt / Tn, t = bt % Tn;
      const size_t row = static_cast<size_t>(bt) * C;
      for (int h = 0; h < H; ++h) {
        const T s = da[(static_cast<size_t>(b) * H + h) * Tn + t];
        T* dw = partial + static_cast<size_t>(h) * (C + 1);
        axpy(dw, s, n + row, C);
        dw[C] += s;
        if (dn && h == 0) {
#pragma omp simd
          for (int c = 0; c < C; ++c) dn[row + c] = s * gate_w[c];
        } else if (dn) {
          axpy(dn + row, s, gate_w + static_cast<size_t>(h) * C, C);
        }
      }
    }
  });
}

}  // namespace

template <typename T>
void rfa_backward(const RfaInputGrads<T>& grads, const RfaParamGrads<T>& pgrads, Workspace<T> workspace,
                  const T* dout, const T* out, const T* saved, const RfaInputs<T>& in, const RfaParams<T>& p,
                  const RfaConfig& c, const AttentionDims& d) {
  const RfaSavedLayout L = rfa_saved_layout(c, d);
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C(), D = c.num_features, F = L.F, E = L.E, Cc = c.chunk_size;
  const int threads = thread_count();
  RFA_ASSERT(workspace.size >= rfa_workspace_size(c, d, threads), "rfa workspace {} < {}", workspace.size,
             rfa_workspace_size(c, d, threads));
  RFA_ASSERT(!c.gated || (in.n && p.gate_w && pgrads.dgate_w && pgrads.dgate_b), "gated RFA needs n and gate grads");
  const T eps_d = T(c.eps_d);
  const RfaScratchDims sd = rfa_scratch_dims(c, d);
  const size_t FP = sd.FP, EP = sd.EP, CP = sd.CP;
  const size_t per_thread = std::max(rfa_forward_scratch_size(c, d), rfa_backward_scratch_size(c, d));
  const size_t FE = static_cast<size_t>(F) * E;
  T* dsigma_parts = workspace.data;                               // (B, H, Dh)
  T* da = dsigma_parts + static_cast<size_t>(d.B) * H * Dh;       // (B, H, T)
  T* gate_parts = da + static_cast<size_t>(d.B) * H * Tn;          // (threads, H, C+1)
  std::fill(gate_parts, gate_parts + static_cast<size_t>(threads) * H * (C + 1), T(0));
  T* thread_slices = workspace.data + rfa_backward_shared_size(d, threads);

  attention_tasks_run(int64_t(d.B) * H, thread_slices, per_thread, threads, [&](int64_t bh, T* scratch) {
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H);
    T* at = scratch;
    auto take = [&](size_t n) { T* r = at; at += n; return r; };
    T* xbar = take(Dh);
    T* dxbar = take(Dh);
    T* Wq = take(size_t(2 * Cc) * Dh);  // (2c, Dh)  Wᵀ du for q rows, then k rows
    T* DU = take(size_t(2 * Cc) * D);   // (2c, D)   du
    T* Kt = take(size_t(Cc) * FP);   // (c, FP)  k̃
    T* Qp = take(size_t(Cc) * FP);   // (c, FP)  q̂ (copy of the saved rows, padded)
    T* VpT = take(size_t(E) * CP);   // (E, CP)  V'ᵀ
    T* Vp = take(size_t(Cc) * E);    // (c, E)   [v, 1]
    T* dY = take(size_t(Cc) * EP);   // (c, EP)  [dnum, dden]
    T* dQ = take(size_t(Cc) * F);    // (c, F)   dq̂
    T* dK = take(size_t(Cc) * F);    // (c, F)   dk̃
    T* dV = take(size_t(Cc) * E);    // (c, E)   dv'
    T* dA = take(size_t(Cc) * Cc);   // (c, c)   (dY V'ᵀ) ⊙ M, lower
    T* PT = take(size_t(Cc) * Cc);   // (c, c)   Pᵀ, upper
    T* dAT = take(size_t(Cc) * Cc);  // (c, c)   dAᵀ, upper
    T* M = take(size_t(Cc) * Cc);    // (c, c)   exp(G_i - G_j), lower
    T* eG = take(Cc);
    T* beta = take(Cc);
    T* g = take(Cc);
    T* w = take(Cc);                 // (c)      exp(G_C - G_j)
    T* dS = take(size_t(F) * EP);    // (F, EP)  gradient of the state leaving the current chunk
    T* dST = take(size_t(E) * FP);   // (E, FP)
    T* SpT = take(size_t(E) * FP);   // (E, FP)  S_prev transposed
    T* QeT = take(size_t(F) * Cc);   // (F, c)   (Q̂ ⊙ exp G)ᵀ
    T* Wp = take(sd.W);              // (D, pad16(Dh)) this head's W, packed
    T* tmp = take(size_t(Cc) * std::max(FP, EP));  // (c, FP or EP) a diag-scaled copy for one product
    RFA_ASSERT(static_cast<size_t>(at - scratch) <= per_thread, "backward scratch overflow");

    const T* sigma = p.sigma + static_cast<size_t>(h) * Dh;
    feature_map_pack_backward(Wp, p.W + static_cast<size_t>(h) * D * Dh, D, Dh);
    T* dsigma = dsigma_parts + static_cast<size_t>(bh) * Dh;
    std::fill(dsigma, dsigma + Dh, T(0));
    bool dS_zero = true;  // dS is all zeros (the state after the last token gets no gradient)
    T dlambda = 0;        // running sum_{t >= r} dG_t

    for (int ci = L.n_chunks - 1; ci >= 0; --ci) {
      const int t0 = ci * Cc, n = std::min(Cc, Tn - t0);
      const size_t bht0 = static_cast<size_t>(bh) * Tn + t0;
      const T* phiq = saved + L.phi_q + bht0 * F;
      const T* phik = saved + L.phi_k + bht0 * F;
      const T* S_prev = saved + L.states + (static_cast<size_t>(bh) * L.n_chunks + ci) * FE;
      const T* P = saved + L.P + (static_cast<size_t>(bh) * L.n_chunks + ci) * Cc * Cc;  // (c, c) from the forward
      auto row_of = [&](int i) { return (static_cast<size_t>(b) * Tn + t0 + i) * C + static_cast<size_t>(h) * Dh; };

      // The chunk's q and k rows are read only at its end (x̄ = r x) and are long out of
      // cache since the forward: request them now, the matmuls below hide the latency.
      for (int i = 0; i < n; ++i)
        for (int e = 0; e < Dh; e += 16) {
          __builtin_prefetch(in.q + row_of(i) + e);
          __builtin_prefetch(in.k + row_of(i) + e);
        }
      // Recompute the chunk: gates, k̃, v'; and dY from dout through the floor.
      gate_rows(g, beta, eG, c.gated ? saved + L.gate_a + bht0 : nullptr, n);
      for (int i = 0; i < n; ++i) {
        std::copy_n(phiq + size_t(i) * F, F, Qp + i * FP);
        std::copy_n(in.v + row_of(i), Dh, Vp + size_t(i) * E);
        Vp[size_t(i) * E + Dh] = T(1);
        // out = num / max(den, eps_d): above the floor dnum = dh/den, dden = -(dh·out)/den;
        // on the floor dnum = dh/eps_d and dden = 0 (the floor is a constant there).
        const T den = saved[L.den + bht0 + i];
        const T* dh = dout + row_of(i);
        T* dYi = dY + i * EP;
        const bool above = den > eps_d;
        const T inv = T(1) / (above ? den : eps_d);
#pragma omp simd  // (no overlap; see the per-token loop at the end)
        for (int e = 0; e < Dh; ++e) dYi[e] = dh[e] * inv;
        dYi[Dh] = above ? -dot(dh, out + row_of(i), Dh) * inv : T(0);
      }
      for (int j = 0; j < n; ++j) {
        for (int f = 0; f < F; ++f) Kt[j * FP + f] = beta[j] * phik[size_t(j) * F + f];
        for (int e = 0; e < E; ++e) VpT[e * CP + j] = Vp[size_t(j) * E + e];
      }
      // dA = dP ⊙ M with dP = dY V'ᵀ (Y_i = sum_j P_ij v'_j, P saved by the forward), in
      // blocks of 4 rows; 0 right of the diagonal, and the transposes are 0 below it.
      for (int i0 = 0; i0 < n; i0 += 4) {
        const int m = std::min(4, n - i0), cols = i0 + m;
        matmul(dA + size_t(i0) * Cc, Cc, dY + i0 * EP, EP, VpT, CP, m, E, cols, T(1), false);
        for (int i = i0; i < cols; ++i) {
          T* dAi = dA + size_t(i) * Cc;
          if (c.gated) {
            // M_ij = exp(G_i - G_j) = prod_{r=j+1..i} g_r = M_{i-1,j} g_i: no exp, no overflow.
            T* Mi = M + size_t(i) * Cc;
            for (int j = 0; j < i; ++j) Mi[j] = M[size_t(i - 1) * Cc + j] * g[i];
            Mi[i] = T(1);
            for (int j = 0; j <= i; ++j) dAi[j] *= Mi[j];
          }
          for (int j = i + 1; j < cols; ++j) dAi[j] = T(0);
        }
      }
      for (int j = 0; j < n; ++j) {
        T* PTj = PT + size_t(j) * Cc;
        T* dATj = dAT + size_t(j) * Cc;
        for (int i = j / 4 * 4; i < j; ++i) PTj[i] = T(0), dATj[i] = T(0);  // read by the 4-row blocks below
        for (int i = j; i < n; ++i) PTj[i] = P[size_t(i) * Cc + j], dATj[i] = dA[size_t(i) * Cc + j];
      }
      // Intra-chunk: dq̂_i = sum_{j<=i} dA_ij k̃_j,  dv'_j = sum_{i>=j} P_ij dy_i,  dk̃_j = sum_{i>=j} dA_ij q̂_i.
      for (int i0 = 0; i0 < n; i0 += 4) {
        const int m = std::min(4, n - i0);
        matmul(dQ + size_t(i0) * F, F, dA + size_t(i0) * Cc, Cc, Kt, FP, m, i0 + m, F, T(1), false);
        // (only dv's first Dh columns are needed: the last entry of v' is the constant 1)
        matmul(dV + size_t(i0) * E, E, PT + size_t(i0) * Cc + i0, Cc, dY + i0 * EP, EP, m, n - i0, Dh, T(1), false);
        matmul(dK + size_t(i0) * F, F, dAT + size_t(i0) * Cc + i0, Cc, Qp + i0 * FP, FP, m, n - i0, F, T(1), false);
      }
      // Y_i += eG_i q̂_iᵀ S_prev:  dq̂_i += eG_i S_prev dy_i
      if ((ci > 0 || saved[L.state_flags + bh] != T(0)) && !all_zero(S_prev, FE)) {
        for (int f = 0; f < F; ++f)
          for (int e = 0; e < E; ++e) SpT[e * FP + f] = S_prev[size_t(f) * E + e];
        for (int i = 0; i < n; ++i)
          for (int e = 0; e < E; ++e) tmp[i * EP + e] = eG[i] * dY[i * EP + e];
        matmul(dQ, F, tmp, EP, SpT, FP, n, E, F, T(1), true);
      }
      // S_next += w_j k̃_j v'_jᵀ, w_j = e^{G_C - G_j}:  dk̃_j += w_j dS v'_j,  dv'_j += w_j dSᵀ k̃_j
      const T decay = eG[n - 1];
      if (!dS_zero) {
        for (int f = 0; f < F; ++f)
          for (int e = 0; e < E; ++e) dST[e * FP + f] = dS[f * EP + e];
        gate_suffix(w, g, n);
        for (int j = 0; j < n; ++j)
          for (int e = 0; e < E; ++e) tmp[j * EP + e] = w[j] * Vp[size_t(j) * E + e];
        matmul(dK, F, tmp, EP, dST, FP, n, E, F, T(1), true);
        for (int j = 0; j < n; ++j)
          for (int f = 0; f < F; ++f) tmp[j * FP + f] = w[j] * Kt[j * FP + f];
        matmul(dV, E, tmp, FP, dS, EP, n, F, Dh, T(1), true);
      }
      // dS_prev = e^{G_C} dS + (Q̂ ⊙ eG)ᵀ dY; not needed before the first chunk (the entering state is a constant).
      if (ci > 0) {
        for (int i = 0; i < n; ++i)
          for (int f = 0; f < F; ++f) QeT[size_t(f) * Cc + i] = Qp[i * FP + f] * eG[i];
        if (!dS_zero)
          for (size_t x = 0; x < size_t(F) * EP; ++x) dS[x] *= decay;
        matmul(dS, EP, QeT, Cc, dY, EP, F, n, E, T(1), !dS_zero);
        dS_zero = false;
      }

      // Per token, last to first: log-gate and gate.
      if (c.gated) {
        for (int i = n - 1; i >= 0; --i) {
          T* dKi = dK + size_t(i) * F;
          const T k_dk = dot(Kt + i * FP, dKi, F);
          dlambda += dot(Qp + i * FP, dQ + size_t(i) * F, F) - k_dk;  // dG_t
          // lambda = logsigmoid(a), k̃ = beta phi(k), beta = 1 - sigmoid(a):
          //   da = beta dlambda - g (dk̃·k̃)
          da[bht0 + i] = beta[i] * dlambda - g[i] * k_dk;
          for (int f = 0; f < F; ++f) dKi[f] *= beta[i];  // dphi(k) = beta dk̃
        }
      }
      // Feature maps (as products), then per token: sigma, normalisation, values.
      feature_map_backward_rows(Wq, DU, dQ, phiq, Wp, c.feature_map, n, D, Dh);
      feature_map_backward_rows(Wq + size_t(Cc) * Dh, DU, dK, phik, Wp, c.feature_map, n, D, Dh);
      for (int i = 0; i < n; ++i) {
        const size_t row = row_of(i);
        // omp simd: the buffers never overlap, but the compiler cannot prove it through
        // the scratch pointers and would run these loops scalar (~25% of this kernel).
#pragma omp simd
        for (int e = 0; e < Dh; ++e) grads.dv[row + e] = dV[size_t(i) * E + e];  // each row once: overwrite
        for (int side = 0; side < 2; ++side) {
          // u = W (sigma ⊙ x̄), x̄ = r x:  dx̄ = sigma ⊙ w, dsigma += x̄ ⊙ w, then the normalisation.
          const T r = saved[(side ? L.r_k : L.r_q) + bht0 + i];
          const T* x = (side ? in.k : in.q) + row;
          const T* w = Wq + (size_t(side) * Cc + i) * Dh;
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
  if (c.gated) gate_backward(grads.dn, gate_parts, da, in.n, p.gate_w, d, threads);

  // dsigma[h] += sum_b partials (serial: H*B*Dh adds).
  for (int h = 0; h < H; ++h)
    for (int b = 0; b < d.B; ++b)
      axpy(pgrads.dsigma + static_cast<size_t>(h) * Dh, T(1), dsigma_parts + (static_cast<size_t>(b) * H + h) * Dh, Dh);
  if (c.gated) {
    for (int t = 0; t < threads; ++t)
      for (int h = 0; h < H; ++h) {
        const T* part = gate_parts + (static_cast<size_t>(t) * H + h) * (C + 1);
        axpy(pgrads.dgate_w + static_cast<size_t>(h) * C, T(1), part, C);
        pgrads.dgate_b[h] += part[C];
      }
  }
}

#define RFA_INSTANTIATE(T)                                                                               \
  template void rfa_backward<T>(const RfaInputGrads<T>&, const RfaParamGrads<T>&, Workspace<T>,        \
                                const T*, const T*, const T*, const RfaInputs<T>&, const RfaParams<T>&, \
                                const RfaConfig&, const AttentionDims&);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
