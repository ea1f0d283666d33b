// RFA chunked backward, docs/rfa-attention.md sections 4 and 5, for both gates: the driver. Each
// (b, h) is one task (attention/rfa_head_backward.h: the formulas and the per-chunk steps), run
// over the thread pool; then the gate's parameter gradients (one gemm over every task's da) and
// sigma's gradient summed over the rows.
#include "attention/attention_tasks.h"
#include "attention/rfa_gate_products.h"
#include "attention/rfa_head_backward.h"
#include "core/error.h"
#include "kernels/vector_math.h"

namespace rfa {
namespace {

template <typename T, bool kFeature>
void backward_heads(const RfaInputGrads<T>& grads, const RfaParamGrads<T>& pgrads, Workspace<T> workspace,
                    const T* dout, const T* out, const T* saved, const RfaInputs<T>& in, const RfaParams<T>& p,
                    const RfaConfig& c, const AttentionDims& d) {
  const RfaSavedLayout L = rfa_saved_layout(c, d);
  const RfaScratchDims sd = rfa_scratch_dims(c, d);
  const int H = d.H, Dh = d.Dh, C = d.C(), D = c.num_features;
  const int threads = thread_count();
  RFA_ASSERT(workspace.size >= rfa_workspace_size(c, d, threads), "rfa workspace {} < {}", workspace.size,
             rfa_workspace_size(c, d, threads));
  RFA_ASSERT(!c.gated || (in.n && p.gate_w && pgrads.dgate_w && pgrads.dgate_b), "gated RFA needs n and gate grads");
  RfaBackwardShared<T> shared;
  const size_t shared_size = shared.carve(workspace.data, c, d, threads);
  T* thread_slices = workspace.data + shared_size;

  for (int h = 0; h < H; ++h)
    feature_map_pack_backward(shared.W_heads + h * sd.W, p.W + static_cast<size_t>(h) * D * Dh, D, Dh);

  attention_tasks_run(int64_t(d.B) * H, thread_slices, rfa_thread_scratch_size(c, d), threads,
                      [&](int64_t bh, T* scratch) {
    const int b = static_cast<int>(bh / H), h = static_cast<int>(bh % H);
    RfaBackwardScratch<T> sc;
    sc.carve(scratch, sd);
    sc.Wp = shared.W_heads + h * sd.W;
    RfaHeadBackward<T, kFeature> hb{{c, d, L, sd, b, h, bh}, grads, in, dout, out, saved, shared.da,
                                    p.sigma + static_cast<size_t>(h) * Dh,
                                    shared.dsigma_parts + static_cast<size_t>(bh) * Dh, sc};
    std::fill(hb.dsigma, hb.dsigma + Dh, T(0));
    if constexpr (kFeature) std::fill(sc.dlam, sc.dlam + L.F, T(0));
    for (int ci = L.n_chunks - 1; ci >= 0; --ci) {
      hb.chunk_enter(ci);
      hb.chunk_recompute();
      hb.chunk_score_grads();
      hb.chunk_intra_grads();
      hb.chunk_state_in_grads();
      hb.chunk_state_out_grads();
      hb.chunk_carry_state_grad();
      hb.chunk_gate_grads();
      hb.chunk_input_grads();
    }
  });
  // a = n gate_wᵀ + gate_b, from every (b, h)'s da: dn = da gate_w (overwrites),
  // dgate_w += daᵀ n, dgate_b += column sums of da.
  if (c.gated)
    rfa_gate_param_grads(grads.dn, pgrads.dgate_w, pgrads.dgate_b, shared.da, in.n, p.gate_w, int64_t(d.B) * d.T,
                         H * rfa_gate_width(c), C);

  // dsigma[h] += sum_b partials (serial: H*B*Dh adds).
  for (int h = 0; h < H; ++h)
    for (int b = 0; b < d.B; ++b)
      axpy(pgrads.dsigma + static_cast<size_t>(h) * Dh, T(1),
           shared.dsigma_parts + (static_cast<size_t>(b) * H + h) * Dh, Dh);
}

}  // namespace

template <typename T>
void rfa_backward(const RfaInputGrads<T>& grads, const RfaParamGrads<T>& pgrads, Workspace<T> workspace,
                  const T* dout, const T* out, const T* saved, const RfaInputs<T>& in, const RfaParams<T>& p,
                  const RfaConfig& c, const AttentionDims& d) {
  if (c.feature_gate) backward_heads<T, true>(grads, pgrads, workspace, dout, out, saved, in, p, c, d);
  else backward_heads<T, false>(grads, pgrads, workspace, dout, out, saved, in, p, c, d);
}

#define RFA_INSTANTIATE(T)                                                                               \
  template void rfa_backward<T>(const RfaInputGrads<T>&, const RfaParamGrads<T>&, Workspace<T>,        \
                                const T*, const T*, const T*, const RfaInputs<T>&, const RfaParams<T>&, \
                                const RfaConfig&, const AttentionDims&);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
