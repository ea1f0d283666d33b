// attention_core.h, decoding side: a layer's state, prefill from it, one step,
// and what a saved state holds. RFA kinds: rfa_recurrent.h (rfa_prefill, the
// fused rfa_decode_step); softmax: softmax_kv_cache.h and softmax_cache_prefill.h.
#include <algorithm>

#include "attention/attention_core.h"
#include "attention/softmax_cache_prefill.h"
#include "core/error.h"

namespace rfa {

template <typename T>
AttentionState<T> attention_state_create(const AttentionSpec& s, const T* random, const AttentionStateOptions& o) {
  if (o.B <= 0) fail("decoder: batch {} must be positive", o.B);
  AttentionState<T> st;
  st.B = o.B;
  switch (s.kind) {
    case AttentionKind::softmax: {
      if (o.max_positions <= 0)
        fail("decoder: a softmax model needs max_positions (prompt + tokens to generate) for its KV cache, got {}",
             o.max_positions);
      if (o.max_positions > (int64_t(1) << 31) - 1) fail("decoder: max_positions {} too large", o.max_positions);
      if (o.window < 0) fail("decoder: window {} must be >= 0 (0 = the whole text)", o.window);
      // Windowed: W slots allocated once, whatever the length of the text.
      const bool ring = o.window > 0;
      const int slots = static_cast<int>(ring ? std::min<int64_t>(o.window, o.max_positions) : o.max_positions);
      st.kv = kv_cache_create<T>(o.B, s.H, s.Dh, slots, ring);
      break;
    }
    case AttentionKind::rfa:
    case AttentionKind::rfa_gate:
      RFA_ASSERT(random != nullptr, "an RFA decoding state needs the layer's random matrices");
      st.rfa = rfa_state_create<T>(s.rfa, o.B, s.H, s.Dh);
      st.random_t.resize(static_cast<size_t>(attention_random_size(s)));
      rfa_random_transpose(st.random_t.data(), random, s.H, s.D, s.Dh);
      break;
  }
  return st;
}

template <typename T>
void attention_state_reset(AttentionState<T>& st) {
  rfa_state_reset(st.rfa);  // (no-op on the kind's unused member)
  kv_cache_reset(st.kv);
}

template <typename T>
void attention_state_truncate(AttentionState<T>& st, int64_t p) {
  KvCache<T>& kv = st.kv;
  if (kv.max_len == 0) return;  // a recurrent state: nothing indexed by position
  if (p > kv.len) fail("decoder: cannot move to position {} with only {} cached", p, kv.len);
  // A ring that wrapped has overwritten the positions an earlier one would need.
  if (kv.ring && p < kv.len && kv.len > kv.max_len)
    fail("decoder: cannot move back to position {} from {}: the window of {} has moved on", p, kv.len, kv.max_len);
  kv.len = static_cast<int>(p);  // truncating a cache gives exactly the state at p
}

template <typename T>
int64_t attention_state_bytes(const AttentionState<T>& st) {
  const KvCache<T>& kv = st.kv;
  const int64_t n = static_cast<int64_t>(st.rfa.S.size()) + 2 * int64_t(kv.B) * kv.H * kv_cache_filled(kv) * kv.Dh;
  return n * static_cast<int64_t>(sizeof(T));
}

template <typename T>
int64_t attention_state_capacity(const AttentionState<T>& st) {
  const int64_t n = static_cast<int64_t>(st.rfa.S.size() + st.kv.k.size() + st.kv.v.size());
  return n * static_cast<int64_t>(sizeof(T));
}

template <typename T>
int64_t attention_state_position_limit(const AttentionState<T>& st) {
  return st.kv.max_len > 0 && !st.kv.ring ? st.kv.max_len : 0;
}

template <typename T>
int64_t attention_prefill_scratch_size(const AttentionCore& core, const AttentionState<T>& st, int B, int S,
                                       int threads) {
  const AttentionSpec& s = core.spec();
  switch (s.kind) {
    case AttentionKind::softmax:
      return static_cast<int64_t>(softmax_cache_prefill_scratch(S, st.kv.max_len, st.kv.ring));
    case AttentionKind::rfa:
    case AttentionKind::rfa_gate:
      return static_cast<int64_t>(rfa_workspace_size(s.rfa, AttentionDims{B, S, s.H, s.Dh}, threads));
  }
  return 0;
}

template <typename T>
void attention_prefill(const AttentionCore& core, const AttentionWeights<T>& w, AttentionState<T>& st, T* out,
                       const AttentionInputs<T>& in, const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  if (s.rope) {  // each row at its absolute position
    rope_forward(in.q, in.q, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0);
    rope_forward(in.k, in.k, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0);
  }
  switch (s.kind) {
    case AttentionKind::softmax:
      softmax_cache_prefill(out, st.kv, call.scratch, in.q, in.k, in.v, call.T_len);
      return;
    case AttentionKind::rfa:
    case AttentionKind::rfa_gate:
      rfa_prefill(out, st.rfa, call.scratch, RfaInputs<T>{in.q, in.k, in.v, in.n, call.pos0},
                  RfaParams<T>{w.sigma, w.gate_w, w.gate_b, call.random}, s.rfa,
                  AttentionDims{call.B, call.T_len, s.H, s.Dh});
      return;
  }
}

template <typename T>
void attention_step(const AttentionCore& core, const AttentionWeights<T>& w, AttentionState<T>& st, T* out,
                    const AttentionInputs<T>& in, int64_t pos) {
  const AttentionSpec& s = core.spec();
  if (s.rope) {
    rope_rows(in.q, core.rope(), st.B, s.H, s.Dh, pos);
    rope_rows(in.k, core.rope(), st.B, s.H, s.Dh, pos);
  }
  switch (s.kind) {
    case AttentionKind::softmax:
      softmax_decode_step(out, st.kv, in.q, in.k, in.v);
      return;
    case AttentionKind::rfa:
    case AttentionKind::rfa_gate:
      rfa_decode_step(out, st.rfa, RfaInputs<T>{in.q, in.k, in.v, in.n, pos},
                      RfaParams<T>{w.sigma, w.gate_w, w.gate_b, nullptr}, st.random_t.data(), s.rfa);
      return;
  }
}

std::string attention_state_save_refusal(const AttentionSpec& s) {
  if (attention_state_grows(s)) return "a softmax model's state is a KV cache that grows with the text";
  return "";
}

template <typename T>
std::vector<int64_t> attention_state_shape(const AttentionState<T>& st) {
  return {st.rfa.B, st.rfa.H, st.rfa.F, st.rfa.Dh + 1};
}

template <typename T>
T* attention_state_data(AttentionState<T>& st) {
  return st.rfa.S.data();
}

template <typename T>
const T* attention_state_data(const AttentionState<T>& st) {
  return st.rfa.S.data();
}

#define RFA_INSTANTIATE(T)                                                                                       \
  template AttentionState<T> attention_state_create<T>(const AttentionSpec&, const T*, const AttentionStateOptions&); \
  template void attention_state_reset<T>(AttentionState<T>&);                                                    \
  template void attention_state_truncate<T>(AttentionState<T>&, int64_t);                                        \
  template int64_t attention_state_bytes<T>(const AttentionState<T>&);                                           \
  template int64_t attention_state_capacity<T>(const AttentionState<T>&);                                        \
  template int64_t attention_state_position_limit<T>(const AttentionState<T>&);                                  \
  template int64_t attention_prefill_scratch_size<T>(const AttentionCore&, const AttentionState<T>&, int, int, int); \
  template void attention_prefill<T>(const AttentionCore&, const AttentionWeights<T>&, AttentionState<T>&, T*,   \
                                     const AttentionInputs<T>&, const AttentionCall<T>&);                        \
  template void attention_step<T>(const AttentionCore&, const AttentionWeights<T>&, AttentionState<T>&, T*,      \
                                  const AttentionInputs<T>&, int64_t);                                           \
  template std::vector<int64_t> attention_state_shape<T>(const AttentionState<T>&);                              \
  template T* attention_state_data<T>(AttentionState<T>&);                                                       \
  template const T* attention_state_data<T>(const AttentionState<T>&);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
