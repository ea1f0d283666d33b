#include "model/attention_layer.h"

#include "attention/rfa_attention.h"
#include "attention/softmax_flash.h"
#include "core/error.h"

namespace rfa {
namespace {

AttentionDims dims_of(const ModelSpec& s, int B, int T) {
  AttentionDims d;
  d.B = B;
  d.T = T;
  d.H = s.H;
  d.Dh = s.Dh;
  return d;
}

template <typename T>
RfaParams<T> rfa_params(const BlockWeights<T>& w, const T* random) {
  RfaParams<T> p;
  p.sigma = w.sigma;
  p.gate_w = w.gate_w;
  p.gate_b = w.gate_b;
  p.W = random;
  return p;
}

template <typename T>
RfaInputs<T> rfa_inputs(const AttentionLayerArgs<T>& a) {
  RfaInputs<T> in;
  in.q = a.q;
  in.k = a.k;
  in.v = a.v;
  in.n = a.n;
  return in;
}

}  // namespace

int64_t attention_layer_saved_size(const ModelSpec& s, int B, int T) {
  if (!s.is_rfa()) return static_cast<int64_t>(softmax_flash_saved_size(dims_of(s, B, T)));
  return static_cast<int64_t>(rfa_saved_size(rfa_config_from(s.attention), dims_of(s, B, T)));
}

int64_t attention_layer_scratch_size(const ModelSpec& s, int B, int T, int threads) {
  if (!s.is_rfa()) return static_cast<int64_t>(softmax_flash_workspace_size(dims_of(s, B, T), threads));
  return static_cast<int64_t>(rfa_workspace_size(rfa_config_from(s.attention), dims_of(s, B, T), threads));
}

template <typename T>
void attention_layer_forward(const ModelSpec& s, const BlockWeights<T>& w, T* out,
                             const AttentionLayerArgs<T>& a) {
  const AttentionDims d = dims_of(s, a.B, a.T_len);
  // Forward and backward share one workspace: they never run at once.
  RFA_ASSERT(a.scratch != nullptr, "attention forward needs its workspace");
  Workspace<T> ws{a.scratch, static_cast<size_t>(a.scratch_size)};
  if (!s.is_rfa()) {
    softmax_flash_forward(out, a.saved, ws, a.q, a.k, a.v, d);
    return;
  }
  rfa_forward(out, a.saved, ws, rfa_inputs(a), rfa_params(w, a.random), rfa_config_from(s.attention), d);
}

template <typename T>
void attention_layer_backward(const ModelSpec& s, const BlockWeights<T>& w, const BlockWeights<T>& dw, T* dq,
                              T* dk, T* dv, T* dn, const T* dout, const T* out, const AttentionLayerArgs<T>& a) {
  const AttentionDims d = dims_of(s, a.B, a.T_len);
  Workspace<T> ws{a.scratch, static_cast<size_t>(a.scratch_size)};
  if (!s.is_rfa()) {
    softmax_flash_backward(dq, dk, dv, ws, dout, out, a.saved, a.q, a.k, a.v, d);
    return;
  }
  RfaInputGrads<T> grads;
  grads.dq = dq;
  grads.dk = dk;
  grads.dv = dv;
  grads.dn = s.is_gated() ? dn : nullptr;
  RfaParamGrads<T> pgrads;
  pgrads.dsigma = dw.sigma;
  pgrads.dgate_w = dw.gate_w;
  pgrads.dgate_b = dw.gate_b;
  rfa_backward(grads, pgrads, ws, dout, out, a.saved, rfa_inputs(a), rfa_params(w, a.random),
               rfa_config_from(s.attention), d);
}

template void attention_layer_forward(const ModelSpec&, const BlockWeights<float>&, float*,
                                      const AttentionLayerArgs<float>&);
template void attention_layer_forward(const ModelSpec&, const BlockWeights<double>&, double*,
                                      const AttentionLayerArgs<double>&);
template void attention_layer_backward(const ModelSpec&, const BlockWeights<float>&, const BlockWeights<float>&,
                                       float*, float*, float*, float*, const float*, const float*,
                                       const AttentionLayerArgs<float>&);
template void attention_layer_backward(const ModelSpec&, const BlockWeights<double>&,
                                       const BlockWeights<double>&, double*, double*, double*, double*,
                                       const double*, const double*, const AttentionLayerArgs<double>&);

}  // namespace rfa
