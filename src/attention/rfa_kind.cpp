// The tables of the RFA kinds, rfa (ungated) and rfa_gate (attention_kind.h): their
// parameters, random matrices, training sizes, forward and backward. The decoding half
// (state layout, prefill, step, memory) is rfa_kind_decode.cpp; the cores are
// rfa_attention.h (chunked) and rfa_recurrent.h (recurrent).
#include "attention/rfa_kind.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attention/random_features.h"

namespace rfa {
namespace {

std::vector<AttentionParam> params(const AttentionSpec& s) {
  std::vector<AttentionParam> p;  // in RfaParamIndex order
  p.push_back({"sigma", {s.H, s.Dh}, false, ParamInit::constant(s.sigma_init)});
  if (s.rfa.feature_gate) {  // a gate per feature: (H, F, C), (H, F)
    const int64_t F = rfa_feature_count(s.rfa);
    p.push_back({"gate_w", {s.H, F, s.C()}, true, ParamInit::normal(1.0)});
    p.push_back({"gate_b", {s.H, F}, false, ParamInit::constant(s.gate_bias_init)});
  } else if (s.rfa.gated) {
    p.push_back({"gate_w", {s.H, s.C()}, true, ParamInit::normal(1.0)});
    p.push_back({"gate_b", {s.H}, false, ParamInit::constant(s.gate_bias_init)});
  }
  return p;
}

int64_t random_size(const AttentionSpec& s) { return int64_t(s.H) * s.D * s.Dh; }

std::vector<int64_t> random_shape(const AttentionSpec& s) { return {s.H, s.D, s.Dh}; }

bool reads_n(const AttentionSpec& s) { return s.rfa.gated; }

double forward_flops_per_token(const AttentionSpec& s, int64_t T) {
  // What the chunked form executes (the useful part: no padding lanes, no block rounding):
  //   feature maps of q and k                         2 * 2 D Dh
  //   q̂ S_prev and the state update, both skipped in one of the n chunks (no state
  //   before the first, none needed after the last)  2 * 2 F (Dh+1) (n-1)/n
  //   the chunk's causal triangle, (c+1)/2 keys a row: (2 F + 2 (Dh+1)) (c+1)/2
  const double D = s.D, Dh = s.Dh, F = rfa_feature_count(s.rfa);
  const double c = double(std::min<int64_t>(s.rfa.chunk_size, T));
  const double chunks = std::ceil(double(T) / c);
  const double gate = s.rfa.feature_gate ? 2 * F * s.C() : 0;  // the feature gate's projection per head
  return s.H * (4 * D * Dh + 4 * F * (Dh + 1) * (chunks - 1) / chunks + (2 * F + 2 * (Dh + 1)) * (c + 1) / 2 + gate);
}

double backward_flops_per_token(const AttentionSpec& s, int64_t T) {
  // Twice the forward's products (each product's two operands get a gradient) except the
  // feature maps' projections: W is drawn, not trained, so each map has one product back
  // (dx from dφ), not two; the feature gate's projection has two (dn and d gate_w).
  const double D = s.D, Dh = s.Dh;
  return 2 * forward_flops_per_token(s, T) - s.H * 4 * D * Dh;
}

AttentionDims dims_of(const AttentionSpec& s, int B, int T) { return AttentionDims{B, T, s.H, s.Dh}; }

int64_t saved_size(const AttentionSpec& s, int B, int T) {
  return static_cast<int64_t>(rfa_saved_size(s.rfa, dims_of(s, B, T)));
}

int64_t scratch_size(const AttentionSpec& s, int B, int T, int threads) {
  return static_cast<int64_t>(rfa_workspace_size(s.rfa, dims_of(s, B, T), threads));
}

SmallShape carry_shape(const AttentionSpec& s) { return {s.H, rfa_feature_count(s.rfa), int64_t(s.Dh) + 1}; }

std::string activation_keys(const AttentionSpec& s) {
  return fmt::format("attention.chunk_size ({}), attention.num_features ({})", s.rfa.chunk_size, s.D);
}

template <typename T>
void random_draw(const AttentionSpec& s, uint64_t seed, uint64_t step, int layer, T* out) {
  random_features_draw(out, seed, step, layer, s.H, s.D, s.Dh, s.orthogonal_features);
}

template <typename T>
void forward(const AttentionCore& core, const AttentionWeights<T>& w, T* out, const AttentionInputs<T>& in,
             const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  rfa_forward(out, call.saved, call.scratch, rfa_kind_inputs(in, call), rfa_kind_params(w, call.random), s.rfa,
              dims_of(s, call.B, call.T_len), call.state_in, call.state_out);
}

template <typename T>
void backward(const AttentionCore& core, const AttentionWeights<T>& w, const AttentionWeights<T>& dw,
              const AttentionInputGrads<T>& g, const T* dout, const T* out, const AttentionInputs<T>& in,
              const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  const RfaInputGrads<T> grads{g.dq, g.dk, g.dv, s.rfa.gated ? g.dn : nullptr};
  const RfaParamGrads<T> pgrads{dw[kRfaSigma], dw[kRfaGateW], dw[kRfaGateB]};
  rfa_backward(grads, pgrads, call.scratch, dout, out, call.saved, rfa_kind_inputs(in, call),
               rfa_kind_params(w, call.random), s.rfa, dims_of(s, call.B, call.T_len));
}

bool state_fixed(const AttentionSpec&) { return false; }  // S (H, F, Dh+1) whatever the length
const char* no_refusal(const AttentionSpec&) { return ""; }

template <typename T>
AttentionKernels<T> kernels() {
  return {random_draw<T>,          forward<T>,          backward<T>,          rfa_kind_state_init<T>,
          rfa_kind_prefill<T>,     rfa_kind_step<T>,    rfa_kind_row_reset<T>};
}

AttentionKindDef rfa_kind_def(AttentionKind kind) {
  return {kind,
          params,
          random_size,
          random_shape,
          reads_n,
          state_fixed,
          forward_flops_per_token,
          backward_flops_per_token,
          saved_size,
          scratch_size,
          carry_shape,
          rfa_kind_state_layout,
          rfa_kind_decode_memory,
          rfa_kind_prefill_scratch_size,
          rfa_kind_position_limit,
          rfa_kind_move_refusal,
          no_refusal,
          rfa_kind_state_form,
          activation_keys,
          rfa_kind_state_keys,
          kernels<float>(),
          kernels<double>()};
}

}  // namespace

extern const AttentionKindDef kAttentionKind_rfa;
extern const AttentionKindDef kAttentionKind_rfa_gate;
const AttentionKindDef kAttentionKind_rfa = rfa_kind_def(AttentionKind::rfa);
const AttentionKindDef kAttentionKind_rfa_gate = rfa_kind_def(AttentionKind::rfa_gate);

}  // namespace rfa
