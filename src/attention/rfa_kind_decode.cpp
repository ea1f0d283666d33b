// The RFA kinds' decoding half of their table: one per-row tensor, the state
// S (H, F, Dh+1) (its last column the normaliser z), fixed in size whatever the
// position; the layer's random matrices transposed for the step as the constants.
#include <fmt/format.h>

#include <algorithm>

#include "attention/rfa_kind.h"
#include "attention/rfa_recurrent.h"
#include "core/error.h"

namespace rfa {
namespace {

template <typename T>
RfaStateView<T> rfa_view(const AttentionSpec& s, const AttentionStateView<T>& v) {
  return RfaStateView<T>{v.B, s.H, rfa_feature_count(s.rfa), s.Dh, v.tensors[0], v.scratch};
}

int64_t row_elements(const AttentionSpec& s) { return int64_t(s.H) * rfa_feature_count(s.rfa) * (int64_t(s.Dh) + 1); }

}  // namespace

AttentionStateLayout rfa_kind_state_layout(const AttentionSpec& s, const AttentionStateOptions&) {
  AttentionStateLayout l;
  l.tensors.push_back({"state", {s.H, rfa_feature_count(s.rfa), int64_t(s.Dh) + 1}});
  l.constants = int64_t(s.H) * s.D * s.Dh;  // Wt (H, Dh, D)
  l.scratch_per_row = int64_t(s.H) * static_cast<int64_t>(rfa_step_scratch_size(s.rfa, s.Dh));
  return l;
}

AttentionDecodeMemory rfa_kind_decode_memory(const AttentionSpec& s, const AttentionStateOptions& o, int S,
                                             int threads) {
  AttentionDecodeMemory m;
  const double B = o.B;
  // The state S and the step's scratch, per row (rfa_kind_state_layout).
  m.state = B * (double(row_elements(s)) + double(s.H) * double(rfa_step_scratch_size(s.rfa, s.Dh)));
  m.state_name = "RFA state";
  m.keys = rfa_kind_state_keys(s) + " of the model";
  m.random = double(s.H) * s.D * s.Dh;
  // Affine in the batch: evaluated at 1 and 2 rows, where no size_t product overflows.
  const double one = double(rfa_workspace_size(s.rfa, {1, S, s.H, s.Dh}, threads));
  const double two = double(rfa_workspace_size(s.rfa, {2, S, s.H, s.Dh}, threads));
  m.scratch = one + (B - 1) * (two - one);
  return m;
}

int64_t rfa_kind_prefill_scratch_size(const AttentionSpec& s, const AttentionStateOptions&, int B, int S,
                                      int threads) {
  return static_cast<int64_t>(rfa_workspace_size(s.rfa, AttentionDims{B, S, s.H, s.Dh}, threads));
}

int64_t rfa_kind_position_limit(const AttentionSpec&, const AttentionStateOptions&) { return 0; }

std::string rfa_kind_move_refusal(const AttentionSpec&, const AttentionStateOptions&, int64_t, int64_t) { return ""; }

std::string rfa_kind_state_form(const AttentionSpec& s) {
  const std::string out = attention_positions_form(s);
  if (!s.rfa.time_discount) return out + ", no time discount";
  return out + fmt::format(", time discount log(t + {}), horizon {}", s.rfa.discount_c, s.rfa.discount_horizon);
}

std::string rfa_kind_state_keys(const AttentionSpec& s) { return fmt::format("attention.num_features ({})", s.D); }

template <typename T>
void rfa_kind_state_init(const AttentionSpec& s, const AttentionStateView<T>&, T* constants, const T* random) {
  RFA_ASSERT(random != nullptr, "an RFA decoding state needs the layer's random matrices");
  rfa_random_transpose(constants, random, s.H, s.D, s.Dh);
}

template <typename T>
void rfa_kind_prefill(const AttentionCore& core, const AttentionWeights<T>& w, const AttentionStateView<T>& v, T* out,
                      const AttentionInputs<T>& in, const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  rfa_prefill(out, rfa_view(s, v), call.scratch, rfa_kind_inputs(in, call), rfa_kind_params(w, call.random), s.rfa,
              AttentionDims{call.B, call.T_len, s.H, s.Dh});
}

template <typename T>
void rfa_kind_step(const AttentionCore& core, const AttentionWeights<T>& w, const AttentionStateView<T>& v, T* out,
                   const AttentionInputs<T>& in, const AttentionRows& rows) {
  const AttentionSpec& s = core.spec();
  rfa_decode_step(out, rfa_view(s, v), RfaInputs<T>{in.q, in.k, in.v, in.n}, rfa_kind_params(w, (const T*)nullptr),
                  v.constants, s.rfa, rows);
}

template <typename T>
void rfa_kind_row_reset(const AttentionStateView<T>& v, int b) {
  std::fill_n(v.row(0, b), v.sizes[0], T(0));
}

#define RFA_INSTANTIATE(T)                                                                                        \
  template void rfa_kind_state_init<T>(const AttentionSpec&, const AttentionStateView<T>&, T*, const T*);        \
  template void rfa_kind_prefill<T>(const AttentionCore&, const AttentionWeights<T>&, const AttentionStateView<T>&, \
                                    T*, const AttentionInputs<T>&, const AttentionCall<T>&);                      \
  template void rfa_kind_step<T>(const AttentionCore&, const AttentionWeights<T>&, const AttentionStateView<T>&, \
                                 T*, const AttentionInputs<T>&, const AttentionRows&);                            \
  template void rfa_kind_row_reset<T>(const AttentionStateView<T>&, int);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
