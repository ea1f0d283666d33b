// The rfa_delta training forward (rfa_delta.h; docs/delta-rule.md section 3): per (b, h), chunk
// by chunk, the chunk's feature maps as matrix products, then its tokens' rank-1 updates in
// order (rfa_delta_token.h) on a state S (F, Dh) that stays in L1; S is saved only where a
// chunk starts, for the backward to recompute the chunk from.
#include <algorithm>

#include "attention/attention_tasks.h"
#include "attention/feature_map.h"
#include "attention/rfa_delta.h"
#include "attention/rfa_delta_layout.h"
#include "attention/rfa_delta_token.h"
#include "attention/rfa_gate_products.h"
#include "attention/rfa_layout.h"
#include "core/error.h"

namespace rfa {

size_t rfa_delta_saved_size(const RfaConfig& c, const AttentionDims& d) {
  return RfaDeltaSaved<float>{}.carve(nullptr, rfa_delta_dims(c, d), d);
}

size_t rfa_delta_workspace_size(const RfaConfig& c, const AttentionDims& d, int threads) {
  return RfaDeltaShared<float>{}.carve(nullptr, d) +
         static_cast<size_t>(threads) * rfa_delta_thread_scratch_size(rfa_delta_dims(c, d));
}

template <typename T>
void rfa_delta_forward(T* out, T* saved, Workspace<T> workspace, const RfaInputs<T>& in, const RfaDeltaParams<T>& p,
                       const RfaConfig& c, const AttentionDims& d, const T* state_in, T* state_out) {
  const RfaDeltaDims sd = rfa_delta_dims(c, d);
  const int H = d.H, Dh = d.Dh, C = d.C(), D = c.num_features, F = int(sd.F), Cc = int(sd.Cc);
  const int threads = thread_count();
  RFA_ASSERT(workspace.size >= rfa_delta_workspace_size(c, d, threads), "rfa_delta workspace {} < {}",
             workspace.size, rfa_delta_workspace_size(c, d, threads));
  RFA_ASSERT(in.n && p.gate_w && p.gate_b && p.beta_w && p.beta_b, "rfa_delta needs n and both gates");
  RfaDeltaShared<T> shared;
  T* thread_slices = workspace.data + shared.carve(workspace.data, d);
  RfaDeltaSaved<T> sv{};
  if (saved) sv.carve(saved, sd, d);
  // Both gates' pre-activations for every row and head: one product each.
  T* alpha_a = saved ? sv.alpha_a : shared.da;  // (B, T, H)
  T* beta_a = saved ? sv.beta_a : shared.db;
  const int64_t rows = int64_t(d.B) * d.T;
  rfa_gate_preact(alpha_a, in.n, p.gate_w, p.gate_b, rows, H, C);
  rfa_gate_preact(beta_a, in.n, p.beta_w, p.beta_b, rows, H, C);
  const size_t FD = sd.F * sd.Dh;
  const T eps_n = T(c.eps_n);

  attention_tasks_run(int64_t(d.B) * H, thread_slices, rfa_delta_thread_scratch_size(sd), threads,
                      [&](int64_t bh, T* scratch) {
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H);
    RfaDeltaForwardScratch<T> s;
    s.carve(scratch, sd);
    const T* sigma = p.sigma + static_cast<size_t>(h) * Dh;
    feature_map_pack_forward(s.Wt, p.W + static_cast<size_t>(h) * D * Dh, D, Dh);
    if (state_in) std::copy_n(state_in + bh * FD, FD, s.S);
    else std::fill_n(s.S, FD, T(0));
    const uint8_t* starts = in.segment_start ? in.segment_start + static_cast<size_t>(b) * d.T : nullptr;
    for (size_t ci = 0; ci < sd.n_chunks; ++ci) {
      const int t0 = int(ci) * Cc, n = std::min(Cc, d.T - t0);
      const size_t bht0 = static_cast<size_t>(bh) * d.T + t0;
      if (saved) std::copy_n(s.S, FD, sv.states + (static_cast<size_t>(bh) * sd.n_chunks + ci) * FD);
      T* phiq = saved ? sv.phi_q + bht0 * F : s.phiq;
      T* phik = saved ? sv.phi_k + bht0 * F : s.phik;
      // Rows: x̄ = x / |x|, sigma ⊙ x̄ (q rows, then k rows), r saved for the backward.
      for (int i = 0; i < n; ++i) {
        const size_t row = (static_cast<size_t>(b) * d.T + t0 + i) * C + static_cast<size_t>(h) * Dh;
        T* SXq = s.SX + size_t(i) * Dh;
        T* SXk = s.SX + size_t(Cc + i) * Dh;
        T r = l2_normalize_forward(s.xbar, in.q + row, Dh, eps_n);
        for (int x = 0; x < Dh; ++x) SXq[x] = sigma[x] * s.xbar[x];
        if (saved) sv.r_q[bht0 + i] = r;
        r = l2_normalize_forward(s.xbar, in.k + row, Dh, eps_n);
        for (int x = 0; x < Dh; ++x) SXk[x] = sigma[x] * s.xbar[x];
        if (saved) sv.r_k[bht0 + i] = r;
      }
      feature_map_forward_rows(phiq, s.U, s.SX, s.Wt, c.feature_map, n, D, Dh);
      feature_map_forward_rows(phik, s.U, s.SX + size_t(Cc) * Dh, s.Wt, c.feature_map, n, D, Dh);
      // The tokens, in order.
      for (int i = 0; i < n; ++i) {
        const size_t bt = static_cast<size_t>(b) * d.T + t0 + i, row = bt * C + static_cast<size_t>(h) * Dh;
        const T alpha = starts && starts[t0 + i] ? T(0) : gate_values(alpha_a[bt * H + h]).g;
        const T beta = gate_values(beta_a[bt * H + h]).g;
        rfa_delta_token_forward(s.S, s.e, s.u, out + row, phik + size_t(i) * F, phiq + size_t(i) * F, in.v + row,
                                alpha, beta, F, Dh);
      }
    }
    if (state_out) std::copy_n(s.S, FD, state_out + bh * FD);
  });
}

#define RFA_INSTANTIATE(T)                                                                                   \
  template void rfa_delta_forward<T>(T*, T*, Workspace<T>, const RfaInputs<T>&, const RfaDeltaParams<T>&,    \
                                     const RfaConfig&, const AttentionDims&, const T*, T*);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
