// The table of attention.kind rfa_delta (attention_kind.h): RFA's feature map and scalar gate
// with the gated delta rule (rfa_delta.h, docs/delta-rule.md). Training and decoding halves
// in one table: the decoding state is one per-row tensor, S (H, F, Dh), fixed in size.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attention/attention_kind.h"
#include "attention/random_features.h"
#include "attention/rfa_delta.h"
#include "core/error.h"

namespace rfa {
namespace {

// The parameters in AttentionWeights, in the order params() lists them.
enum RfaDeltaParamIndex { kDeltaSigma = 0, kDeltaGateW = 1, kDeltaGateB = 2, kDeltaBetaW = 3, kDeltaBetaB = 4 };

std::vector<AttentionParam> params(const AttentionSpec& s) {
  return {{"sigma", {s.H, s.Dh}, false, ParamInit::constant(s.sigma_init)},
          {"gate_w", {s.H, s.C()}, true, ParamInit::normal(1.0)},
          {"gate_b", {s.H}, false, ParamInit::constant(s.gate_bias_init)},
          {"beta_w", {s.H, s.C()}, true, ParamInit::normal(1.0)},
          {"beta_b", {s.H}, false, ParamInit::constant(0.0)}};  // beta = 1/2 at init
}

template <typename T>
RfaDeltaParams<T> params_of(const AttentionWeights<T>& w, const T* random) {
  return {w[kDeltaSigma], w[kDeltaGateW], w[kDeltaGateB], w[kDeltaBetaW], w[kDeltaBetaB], random};
}

template <typename T>
RfaInputs<T> inputs_of(const AttentionInputs<T>& in, const AttentionCall<T>& call) {
  return RfaInputs<T>{in.q, in.k, in.v, in.n, call.pos0, call.row_pos0, call.segment_start};
}

int64_t F_of(const AttentionSpec& s) { return rfa_feature_count(s.rfa); }
AttentionDims dims_of(const AttentionSpec& s, int B, int T) { return AttentionDims{B, T, s.H, s.Dh}; }

int64_t random_size(const AttentionSpec& s) { return int64_t(s.H) * s.D * s.Dh; }
std::vector<int64_t> random_shape(const AttentionSpec& s) { return {s.H, s.D, s.Dh}; }
bool reads_n(const AttentionSpec&) { return true; }  // both gates read n

double forward_flops_per_token(const AttentionSpec& s, int64_t) {
  // Per head: the two feature maps (2 * 2 D Dh), the two gates' projections (2 * 2 C), and the
  // token's passes over S (F, Dh): decay and recall 3, write and read 4 flops an element.
  const double D = s.D, Dh = s.Dh, F = double(F_of(s));
  return s.H * (4 * D * Dh + 4.0 * s.C() + 7 * F * Dh);
}

double backward_flops_per_token(const AttentionSpec& s, int64_t) {
  // Per head: one product back through each feature map (W is drawn, not trained: 2 D Dh each),
  // two through each gate's projection (dn and the weights), the chunk's states recomputed
  // from its boundary (the forward's 7 F Dh) and back-propagated (twice that).
  const double D = s.D, Dh = s.Dh, F = double(F_of(s));
  return s.H * (4 * D * Dh + 8.0 * s.C() + 21 * F * Dh);
}

int64_t saved_size(const AttentionSpec& s, int B, int T) {
  return static_cast<int64_t>(rfa_delta_saved_size(s.rfa, dims_of(s, B, T)));
}
int64_t scratch_size(const AttentionSpec& s, int B, int T, int threads) {
  return static_cast<int64_t>(rfa_delta_workspace_size(s.rfa, dims_of(s, B, T), threads));
}
SmallShape carry_shape(const AttentionSpec& s) { return {s.H, F_of(s), s.Dh}; }

std::string activation_keys(const AttentionSpec& s) {
  return fmt::format("attention.chunk_size ({}), attention.num_features ({})", s.rfa.chunk_size, s.D);
}
std::string state_keys(const AttentionSpec& s) { return fmt::format("attention.num_features ({})", s.D); }

template <typename T>
void random_draw(const AttentionSpec& s, uint64_t seed, uint64_t step, int layer, T* out) {
  random_features_draw(out, seed, step, layer, s.H, s.D, s.Dh, s.orthogonal_features);
}

template <typename T>
void forward(const AttentionCore& core, const AttentionWeights<T>& w, T* out, const AttentionInputs<T>& in,
             const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  rfa_delta_forward(out, call.saved, call.scratch, inputs_of(in, call), params_of(w, call.random), s.rfa,
                    dims_of(s, call.B, call.T_len), call.state_in, call.state_out);
}

template <typename T>
void backward(const AttentionCore& core, const AttentionWeights<T>& w, const AttentionWeights<T>& dw,
              const AttentionInputGrads<T>& g, const T* dout, const T*, const AttentionInputs<T>& in,
              const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  const RfaDeltaParamGrads<T> pg{dw[kDeltaSigma], dw[kDeltaGateW], dw[kDeltaGateB], dw[kDeltaBetaW], dw[kDeltaBetaB]};
  rfa_delta_backward(RfaInputGrads<T>{g.dq, g.dk, g.dv, g.dn}, pg, call.scratch, dout, call.saved, inputs_of(in, call),
                     params_of(w, call.random), s.rfa, dims_of(s, call.B, call.T_len));
}

// ---- Decoding: the state S (H, F, Dh) per row; the constants every head's W packed.

AttentionStateLayout state_layout(const AttentionSpec& s, const AttentionStateOptions&) {
  AttentionStateLayout l;
  l.tensors.push_back({"state", {s.H, F_of(s), s.Dh}});
  l.constants = static_cast<int64_t>(rfa_delta_constants_size(s.rfa, s.H, s.Dh));
  l.scratch_per_row = int64_t(s.H) * static_cast<int64_t>(rfa_delta_step_scratch_size(s.rfa, s.Dh));
  return l;
}

AttentionDecodeMemory decode_memory(const AttentionSpec& s, const AttentionStateOptions& o, int S, int threads) {
  AttentionDecodeMemory m;
  const double B = o.B;
  m.state = B * (double(s.H) * double(F_of(s)) * s.Dh + double(s.H) * double(rfa_delta_step_scratch_size(s.rfa, s.Dh)));
  m.state_name = "RFA state";  // the name decode_memory reports and its tests read, as for rfa_gate
  m.keys = state_keys(s) + " of the model";
  m.random = double(rfa_delta_constants_size(s.rfa, s.H, s.Dh));
  // Affine in the batch: evaluated at 1 and 2 rows, where no size_t product overflows.
  const double one = double(rfa_delta_workspace_size(s.rfa, {1, S, s.H, s.Dh}, threads));
  const double two = double(rfa_delta_workspace_size(s.rfa, {2, S, s.H, s.Dh}, threads));
  m.scratch = one + (B - 1) * (two - one);
  return m;
}

int64_t prefill_scratch_size(const AttentionSpec& s, const AttentionStateOptions&, int B, int S, int threads) {
  return static_cast<int64_t>(rfa_delta_workspace_size(s.rfa, AttentionDims{B, S, s.H, s.Dh}, threads));
}
bool state_fixed(const AttentionSpec&) { return false; }  // S (H, F, Dh) whatever the length
int64_t position_limit(const AttentionSpec&, const AttentionStateOptions&) { return 0; }
std::string move_refusal(const AttentionSpec&, const AttentionStateOptions&, int64_t, int64_t) {
  return "";  // S holds no positions
}
const char* save_refusal(const AttentionSpec&) { return ""; }
std::string state_form(const AttentionSpec& s) { return attention_positions_form(s) + ", gated delta rule"; }

template <typename T>
void state_init(const AttentionSpec& s, const AttentionStateView<T>&, T* constants, const T* random) {
  RFA_ASSERT(random != nullptr, "an rfa_delta decoding state needs the layer's random matrices");
  rfa_delta_constants_fill(constants, random, s.rfa, s.H, s.Dh);
}

template <typename T>
void prefill(const AttentionCore& core, const AttentionWeights<T>& w, const AttentionStateView<T>& v, T* out,
             const AttentionInputs<T>& in, const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  RFA_ASSERT(v.B == call.B, "rfa_delta prefill of {} rows into a view of {}", call.B, v.B);
  rfa_delta_forward(out, static_cast<T*>(nullptr), call.scratch, inputs_of(in, call), params_of(w, call.random),
                    s.rfa, dims_of(s, call.B, call.T_len), v.tensors[0], v.tensors[0]);
}

template <typename T>
void step(const AttentionCore& core, const AttentionWeights<T>& w, const AttentionStateView<T>& v, T* out,
          const AttentionInputs<T>& in, const AttentionRows& rows) {
  const AttentionSpec& s = core.spec();
  rfa_delta_step(out, v.tensors[0], v.scratch, RfaInputs<T>{in.q, in.k, in.v, in.n},
                 params_of(w, static_cast<const T*>(nullptr)), v.constants, s.rfa, s.H, s.Dh, rows);
}

template <typename T>
void row_reset(const AttentionStateView<T>& v, int b) {
  std::fill_n(v.row(0, b), v.sizes[0], T(0));
}

template <typename T>
AttentionKernels<T> kernels() {
  return {random_draw<T>, forward<T>, backward<T>, state_init<T>, prefill<T>, step<T>, row_reset<T>};
}

}  // namespace

extern const AttentionKindDef kAttentionKind_rfa_delta;
const AttentionKindDef kAttentionKind_rfa_delta = {AttentionKind::rfa_delta,
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
                                                   state_layout,
                                                   decode_memory,
                                                   prefill_scratch_size,
                                                   position_limit,
                                                   move_refusal,
                                                   save_refusal,
                                                   state_form,
                                                   activation_keys,
                                                   state_keys,
                                                   kernels<float>(),
                                                   kernels<double>()};

}  // namespace rfa
