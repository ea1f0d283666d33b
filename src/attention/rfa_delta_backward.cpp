// The rfa_delta training backward (rfa_delta.h; docs/delta-rule.md section 4): per (b, h), chunks
// in reverse. Each chunk's states are recomputed from its saved entry state into the thread's
// scratch (the state entering every token, with each token's e and u), then the tokens run
// backwards (rfa_delta_token_backward) carrying dS; the chunk's feature maps then go back as
// matrix products. The gates' projections go back for all rows at once after the tasks.
#include <algorithm>

#include "attention/attention_tasks.h"
#include "attention/feature_map.h"
#include "attention/rfa_delta.h"
#include "attention/rfa_delta_layout.h"
#include "attention/rfa_delta_token.h"
#include "attention/rfa_gate_products.h"
#include "attention/rfa_layout.h"
#include "core/error.h"
#include "kernels/gemm.h"

namespace rfa {
namespace {

// From w = Wᵀ du of one side's rows (n, Dh): dx̄ = sigma ⊙ w, dsigma += x̄ ⊙ w, then
// dx = r (dx̄ - x̄ (x̄·dx̄)) into the (B, T, C) gradient. x̄ = x r from the input and the saved r.
template <typename T>
void features_back(T* dx_all, T* dsigma, RfaDeltaBackwardScratch<T>& s, const T* w, const T* x_all, const T* r,
                   const T* sigma, size_t row0, int C, int Dh, int n) {
  for (int i = 0; i < n; ++i) {
    const size_t row = row0 + size_t(i) * C;
    const T* x = x_all + row;
    const T* wi = w + size_t(i) * Dh;
    for (int j = 0; j < Dh; ++j) {
      s.xbar[j] = x[j] * r[i];
      s.dxbar[j] = sigma[j] * wi[j];
      dsigma[j] += s.xbar[j] * wi[j];
    }
    l2_normalize_backward(dx_all + row, s.dxbar, s.xbar, r[i], Dh);
  }
}

}  // namespace

template <typename T>
void rfa_delta_backward(const RfaInputGrads<T>& grads, const RfaDeltaParamGrads<T>& pgrads, Workspace<T> workspace,
                        const T* dout, const T* saved, const RfaInputs<T>& in, const RfaDeltaParams<T>& p,
                        const RfaConfig& c, const AttentionDims& d) {
  const RfaDeltaDims sd = rfa_delta_dims(c, d);
  const int H = d.H, Dh = d.Dh, C = d.C(), D = c.num_features, F = int(sd.F), Cc = int(sd.Cc);
  const int threads = thread_count();
  RFA_ASSERT(workspace.size >= rfa_delta_workspace_size(c, d, threads), "rfa_delta workspace {} < {}",
             workspace.size, rfa_delta_workspace_size(c, d, threads));
  RFA_ASSERT(saved != nullptr, "rfa_delta backward needs the forward's saved activations");
  RfaDeltaShared<T> shared;
  T* thread_slices = workspace.data + shared.carve(workspace.data, d);
  RfaDeltaSaved<const T> sv{};
  sv.carve(saved, sd, d);
  const size_t FD = sd.F * sd.Dh;

  attention_tasks_run(int64_t(d.B) * H, thread_slices, rfa_delta_thread_scratch_size(sd), threads,
                      [&](int64_t bh, T* scratch) {
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H);
    RfaDeltaBackwardScratch<T> s;
    s.carve(scratch, sd);
    const T* sigma = p.sigma + static_cast<size_t>(h) * Dh;
    T* dsigma = shared.dsigma_parts + static_cast<size_t>(bh) * Dh;
    std::fill_n(dsigma, Dh, T(0));
    feature_map_pack_backward(s.Wp, p.W + static_cast<size_t>(h) * D * Dh, D, Dh);
    std::fill_n(s.dS, FD, T(0));  // nothing reads the state after the last token; (Dh, F) as s.S
    const uint8_t* starts = in.segment_start ? in.segment_start + static_cast<size_t>(b) * d.T : nullptr;
    for (size_t ci = sd.n_chunks; ci-- > 0;) {
      const int t0 = int(ci) * Cc, n = std::min(Cc, d.T - t0);
      const size_t bht0 = static_cast<size_t>(bh) * d.T + t0;
      const T* phiq = sv.phi_q + bht0 * F;
      const T* phik = sv.phi_k + bht0 * F;
      auto gates = [&](int i, T& alpha, T& beta, GateValues<T>& ga, GateValues<T>& gb) {
        const size_t bt = static_cast<size_t>(b) * d.T + t0 + i;
        ga = gate_values(sv.alpha_a[bt * H + h]);
        gb = gate_values(sv.beta_a[bt * H + h]);
        alpha = starts && starts[t0 + i] ? T(0) : ga.g;
        beta = gb.g;
      };
      // Recompute the chunk from its entry state: the state entering each token, e and u.
      // (transposed: St (Dh, F), the backward's layout, rfa_delta_token.h)
      const T* entry = sv.states + (static_cast<size_t>(bh) * sd.n_chunks + ci) * FD;
      for (int f = 0; f < F; ++f)
        for (int x = 0; x < Dh; ++x) s.S[size_t(x) * F + f] = entry[size_t(f) * Dh + x];
      for (int i = 0; i < n; ++i) {
        const size_t row = (static_cast<size_t>(b) * d.T + t0 + i) * C + static_cast<size_t>(h) * Dh;
        T alpha, beta;
        GateValues<T> ga, gb;
        gates(i, alpha, beta, ga, gb);
        std::copy_n(s.S, FD, s.Sprev + size_t(i) * FD);
        rfa_delta_token_recompute_t(s.S, s.E + size_t(i) * Dh, s.Uv + size_t(i) * Dh, phik + size_t(i) * F,
                                    in.v + row, alpha, beta, F, Dh);
      }
      // Back through the tokens.
      for (int i = n - 1; i >= 0; --i) {
        const size_t bt = static_cast<size_t>(b) * d.T + t0 + i, row = bt * C + static_cast<size_t>(h) * Dh;
        T alpha, beta;
        GateValues<T> ga, gb;
        gates(i, alpha, beta, ga, gb);
        RfaDeltaTokenGrads<T> g{s.dPq + size_t(i) * F, s.dPk + size_t(i) * F, grads.dv + row};
        rfa_delta_token_backward(g, s.dS, s.du, s.dr, s.dav, s.Sprev + size_t(i) * FD, s.E + size_t(i) * Dh,
                                 s.Uv + size_t(i) * Dh, dout + row, phik + size_t(i) * F, phiq + size_t(i) * F,
                                 alpha, beta, F, Dh);
        // sigmoid' = g (1 - g); a document's first token has alpha = 0 whatever its gate.
        shared.da[bt * H + h] = starts && starts[t0 + i] ? T(0) : g.dalpha * ga.g * ga.beta;
        shared.db[bt * H + h] = g.dbeta * gb.g * gb.beta;
      }
      // The feature maps of the chunk's q and k rows.
      const size_t row0 = (static_cast<size_t>(b) * d.T + t0) * C + static_cast<size_t>(h) * Dh;
      feature_map_backward_rows(s.Wq, s.DU, s.dPq, phiq, s.Wp, c.feature_map, n, D, Dh);
      features_back(grads.dq, dsigma, s, s.Wq, in.q, sv.r_q + bht0, sigma, row0, C, Dh, n);
      feature_map_backward_rows(s.Wq, s.DU, s.dPk, phik, s.Wp, c.feature_map, n, D, Dh);
      features_back(grads.dk, dsigma, s, s.Wq, in.k, sv.r_k + bht0, sigma, row0, C, Dh, n);
    }
  });

  // dsigma: the (b, h) parts summed over b, in order (deterministic).
  for (int bb = 0; bb < d.B; ++bb)
    for (int h = 0; h < H; ++h)
      axpy(pgrads.dsigma + static_cast<size_t>(h) * Dh, T(1),
           shared.dsigma_parts + (static_cast<size_t>(bb) * H + h) * Dh, Dh);
  // The gates: a = n gate_wᵀ + gate_b, b = n beta_wᵀ + beta_b; dn = da gate_w + db beta_w.
  const int64_t rows = int64_t(d.B) * d.T;
  rfa_gate_param_grads(grads.dn, pgrads.dgate_w, pgrads.dgate_b, shared.da, in.n, p.gate_w, rows, H, C);
  rfa_gate_param_grads(static_cast<T*>(nullptr), pgrads.dbeta_w, pgrads.dbeta_b, shared.db, in.n, p.beta_w, rows, H,
                       C);
  if (grads.dn) gemm(false, false, rows, int64_t(C), int64_t(H), T(1), shared.db, int64_t(H), p.beta_w, int64_t(C),
                     T(1), grads.dn, int64_t(C));
}

#define RFA_INSTANTIATE(T)                                                                                      \
  template void rfa_delta_backward<T>(const RfaInputGrads<T>&, const RfaDeltaParamGrads<T>&, Workspace<T>,      \
                                      const T*, const T*, const RfaInputs<T>&, const RfaDeltaParams<T>&,         \
                                      const RfaConfig&, const AttentionDims&);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
