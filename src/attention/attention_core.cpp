// attention_core.h, training side: parameters, random matrices, sizes, forward
// and backward. The decoding side is attention_decode.cpp.
#include "attention/attention_core.h"

#include <algorithm>
#include <cmath>

#include "attention/random_features.h"
#include "attention/rfa_attention.h"
#include "attention/softmax_flash.h"
#include "core/error.h"
#include "core/step_profile.h"

namespace rfa {
namespace {

AttentionDims dims_of(const AttentionSpec& s, int B, int T) { return AttentionDims{B, T, s.H, s.Dh}; }

template <typename T>
RfaParams<T> rfa_params(const AttentionWeights<T>& w, const T* random) {
  return RfaParams<T>{w.sigma, w.gate_w, w.gate_b, random};
}

template <typename T>
RfaInputs<T> rfa_inputs(const AttentionInputs<T>& in, int64_t pos0) {
  return RfaInputs<T>{in.q, in.k, in.v, in.n, pos0};
}

}  // namespace

std::vector<AttentionParam> attention_params(const AttentionSpec& s) {
  std::vector<AttentionParam> p;
  switch (s.kind) {
    case AttentionKind::softmax:
      break;
    case AttentionKind::rfa_gate:
    case AttentionKind::rfa:
      p.push_back({"sigma", {s.H, s.Dh}, false, ParamInit::constant(s.sigma_init)});
      if (s.kind == AttentionKind::rfa_gate && s.rfa.feature_gate) {  // a gate per feature: (H, F, C), (H, F)
        const int64_t F = rfa_feature_count(s.rfa);
        p.push_back({"gate_w", {s.H, F, s.C()}, true, ParamInit::normal(1.0)});
        p.push_back({"gate_b", {s.H, F}, false, ParamInit::constant(s.gate_bias_init)});
      } else if (s.kind == AttentionKind::rfa_gate) {
        p.push_back({"gate_w", {s.H, s.C()}, true, ParamInit::normal(1.0)});
        p.push_back({"gate_b", {s.H}, false, ParamInit::constant(s.gate_bias_init)});
      }
      break;
  }
  return p;
}

template <typename T>
AttentionWeights<T> attention_weights_view(const ParamTable& table, const std::string& prefix, T* base) {
  auto opt = [&](const char* name) -> T* {
    const ParamEntry* e = table.find(prefix + name);
    return e ? base + e->offset : nullptr;
  };
  return AttentionWeights<T>{opt("sigma"), opt("gate_w"), opt("gate_b")};
}

int64_t attention_random_size(const AttentionSpec& s) { return int64_t(s.H) * s.D * s.Dh; }

std::vector<int64_t> attention_random_shape(const AttentionSpec& s) { return {s.H, s.D, s.Dh}; }

template <typename T>
void attention_random_draw(const AttentionSpec& s, uint64_t seed, uint64_t step, int layer, T* out) {
  if (s.D > 0) random_features_draw(out, seed, step, layer, s.H, s.D, s.Dh, s.orthogonal_features);
}

AttentionCore::AttentionCore(const AttentionSpec& spec, int64_t max_positions) : spec_(spec) {
  if (spec_.rope) rope_ = RopeTable::build(max_positions, spec_.Dh, spec_.rope_theta);
}

bool attention_reads_n(const AttentionSpec& s) { return s.kind == AttentionKind::rfa_gate; }

bool attention_state_grows(const AttentionSpec& s) { return s.kind == AttentionKind::softmax; }

double attention_forward_flops_per_token(const AttentionSpec& s, int64_t T) {
  switch (s.kind) {
    case AttentionKind::softmax:
      return 2.0 * s.C() * double(T + 1);
    case AttentionKind::rfa:
    case AttentionKind::rfa_gate: {
      // What the chunked form executes (the useful part: no padding lanes, no block rounding):
      //   feature maps of q and k                         2 * 2 D Dh
      //   q̂ S_prev and the state update, both skipped in one of the n chunks (no state
      //   before the first, none needed after the last)  2 * 2 F (Dh+1) (n-1)/n
      //   the chunk's causal triangle, (c+1)/2 keys a row: (2 F + 2 (Dh+1)) (c+1)/2
      const double D = s.D, Dh = s.Dh, F = rfa_feature_count(s.rfa);
      const double c = double(std::min<int64_t>(s.rfa.chunk_size, T));
      const double chunks = std::ceil(double(T) / c);
      const double gate = s.rfa.feature_gate ? 2 * F * s.C() : 0;  // the feature gate's projection per head
      return s.H * (4 * D * Dh + 4 * F * (Dh + 1) * (chunks - 1) / chunks + (2 * F + 2 * (Dh + 1)) * (c + 1) / 2 +
                    gate);
    }
  }
  return 0;
}

int64_t attention_carry_size(const AttentionSpec& s, int B) {
  if (s.kind == AttentionKind::softmax) return 0;
  return int64_t(B) * s.H * rfa_feature_count(s.rfa) * (int64_t(s.Dh) + 1);
}

int64_t attention_saved_size(const AttentionSpec& s, int B, int T) {
  switch (s.kind) {
    case AttentionKind::softmax: return static_cast<int64_t>(softmax_flash_saved_size(dims_of(s, B, T)));
    case AttentionKind::rfa:
    case AttentionKind::rfa_gate: return static_cast<int64_t>(rfa_saved_size(s.rfa, dims_of(s, B, T)));
  }
  return 0;
}

int64_t attention_scratch_size(const AttentionSpec& s, int B, int T, int threads) {
  switch (s.kind) {
    case AttentionKind::softmax:
      return static_cast<int64_t>(softmax_flash_workspace_size(dims_of(s, B, T), threads));
    case AttentionKind::rfa:
    case AttentionKind::rfa_gate: return static_cast<int64_t>(rfa_workspace_size(s.rfa, dims_of(s, B, T), threads));
  }
  return 0;
}

template <typename T>
void attention_forward(const AttentionCore& core, const AttentionWeights<T>& w, T* out, const AttentionInputs<T>& in,
                       const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  const AttentionDims d = dims_of(s, call.B, call.T_len);
  RFA_ASSERT(call.scratch.data != nullptr, "attention forward needs its scratch");
  const double tokens = double(call.B) * call.T_len;
  ProfileScope profile(ProfiledKernel::attention_forward, attention_forward_flops_per_token(s, call.T_len) * tokens, 0);
  if (s.rope) {  // q = R q_pre, k = R k_pre, in place
    rope_forward(in.q, in.q, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0);
    rope_forward(in.k, in.k, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0);
  }
  switch (s.kind) {
    case AttentionKind::softmax:
      RFA_ASSERT(!call.state_in && !call.state_out, "softmax carries no state between segments");
      softmax_flash_forward(out, call.saved, call.scratch, in.q, in.k, in.v, d);
      return;
    case AttentionKind::rfa:
    case AttentionKind::rfa_gate:
      rfa_forward(out, call.saved, call.scratch, rfa_inputs(in, call.pos0), rfa_params(w, call.random), s.rfa, d,
                  call.state_in, call.state_out);
      return;
  }
}

template <typename T>
void attention_backward(const AttentionCore& core, const AttentionWeights<T>& w, const AttentionWeights<T>& dw,
                        const AttentionInputGrads<T>& g, const T* dout, const T* out, const AttentionInputs<T>& in,
                        const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  const AttentionDims d = dims_of(s, call.B, call.T_len);
  const double tokens = double(call.B) * call.T_len;  // the backward does twice the forward's work
  ProfileScope profile(ProfiledKernel::attention_backward,
                       2 * attention_forward_flops_per_token(s, call.T_len) * tokens, 0);
  switch (s.kind) {
    case AttentionKind::softmax:
      softmax_flash_backward(g.dq, g.dk, g.dv, call.scratch, dout, out, call.saved, in.q, in.k, in.v, d);
      break;
    case AttentionKind::rfa:
    case AttentionKind::rfa_gate: {
      const RfaInputGrads<T> grads{g.dq, g.dk, g.dv, s.rfa.gated ? g.dn : nullptr};
      const RfaParamGrads<T> pgrads{dw.sigma, dw.gate_w, dw.gate_b};
      rfa_backward(grads, pgrads, call.scratch, dout, out, call.saved, rfa_inputs(in, call.pos0), rfa_params(w, call.random),
                   s.rfa, d);
      break;
    }
  }
  if (s.rope) {  // q = R q_pre: d q_pre = Rᵀ dq, rotated in place (no zeroed buffer)
    rope_backward(g.dq, g.dq, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0);
    rope_backward(g.dk, g.dk, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0);
  }
}

#define RFA_INSTANTIATE(T)                                                                                       \
  template AttentionWeights<T> attention_weights_view<T>(const ParamTable&, const std::string&, T*);             \
  template void attention_random_draw<T>(const AttentionSpec&, uint64_t, uint64_t, int, T*);                     \
  template void attention_forward<T>(const AttentionCore&, const AttentionWeights<T>&, T*,                       \
                                     const AttentionInputs<T>&, const AttentionCall<T>&);                        \
  template void attention_backward<T>(const AttentionCore&, const AttentionWeights<T>&, const AttentionWeights<T>&, \
                                      const AttentionInputGrads<T>&, const T*, const T*, const AttentionInputs<T>&, \
                                      const AttentionCall<T>&);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
