// The table of the softmax baseline (attention_kind.h): no parameters of its own, no
// random matrices; training through the blockwise kernels (softmax_flash.h); decoding
// over a KV cache of two per-row tensors, keys and values (H, slots, Dh), whole or a ring
// window (softmax_kv_cache.h, softmax_cache_prefill.h). A row's cache length is its
// position, which the caller owns.
// A trained sliding window (spec.window > 0, attention.window; docs/hybrid.md) masks keys
// older than the window in training too, so decoding needs exactly `window` slots: a ring
// of that size whatever the decoder's window or length, a fixed-size state (it does not
// grow, can be saved, and positions are unlimited).
#include <fmt/format.h>

#include <algorithm>

#include "attention/attention_kind.h"
#include "attention/softmax_cache_prefill.h"
#include "attention/softmax_flash.h"
#include "attention/softmax_kv_cache.h"
#include "core/error.h"

namespace rfa {
namespace {

std::vector<AttentionParam> params(const AttentionSpec&) { return {}; }
int64_t random_size(const AttentionSpec&) { return 0; }
std::vector<int64_t> random_shape(const AttentionSpec&) { return {}; }
bool reads_n(const AttentionSpec&) { return false; }
SmallShape carry_shape(const AttentionSpec&) { return {}; }

double forward_flops_per_token(const AttentionSpec& s, int64_t T) {
  return 2.0 * s.C() * double((s.window > 0 ? std::min<int64_t>(T, s.window) : T) + 1);
}
// dS = dO Vᵀ, dV = Pᵀ dO, dQ = dS K, dK = dSᵀ Q: twice the forward's products (the scores it
// recomputes off the diagonal blocks from the saved log-sum-exp are not counted).
double backward_flops_per_token(const AttentionSpec& s, int64_t T) { return 2 * forward_flops_per_token(s, T); }
bool state_grows(const AttentionSpec& s) { return s.window == 0; }

AttentionDims dims_of(const AttentionSpec& s, int B, int T) { return AttentionDims{B, T, s.H, s.Dh}; }

int64_t saved_size(const AttentionSpec& s, int B, int T) {
  return static_cast<int64_t>(softmax_flash_saved_size(dims_of(s, B, T)));
}

int64_t scratch_size(const AttentionSpec& s, int B, int T, int threads) {
  return static_cast<int64_t>(softmax_flash_workspace_size(dims_of(s, B, T), threads));
}

// A trained window, or the decoder's over a full-attention layer: a ring.
bool ring_of(const AttentionSpec& s, const AttentionStateOptions& o) { return s.window > 0 || o.window > 0; }
// Slots of a row: the trained window (a ring of exactly that many), the decoder's window
// (a ring), or every position (linear).
int64_t slots_of(const AttentionSpec& s, const AttentionStateOptions& o) {
  if (s.window > 0) return s.window;
  return ring_of(s, o) ? std::min<int64_t>(o.window, o.max_positions) : o.max_positions;
}

AttentionStateLayout state_layout(const AttentionSpec& s, const AttentionStateOptions& o) {
  if (o.window < 0) fail("decoder: window {} must be >= 0 (0 = the whole text)", o.window);
  if (s.window > 0) {  // the trained window: its ring, whatever max_positions and the decoder's window say
    AttentionStateLayout l;
    l.tensors.push_back({"k", {s.H, s.window, s.Dh}, 1});
    l.tensors.push_back({"v", {s.H, s.window, s.Dh}, 1});
    l.scratch_per_row = int64_t(s.H) * s.window;
    return l;
  }
  if (o.max_positions <= 0)
    fail("decoder: a softmax model needs max_positions (prompt + tokens to generate) for its KV cache, got {}",
         o.max_positions);
  if (o.max_positions > (int64_t(1) << 31) - 1) fail("decoder: max_positions {} too large", o.max_positions);
  // Windowed: W slots allocated once, whatever the length of the text.
  const int64_t slots = slots_of(s, o);
  AttentionStateLayout l;
  l.tensors.push_back({"k", {s.H, slots, s.Dh}, 1});  // (H, slot, Dh): a position's slot on axis 1
  l.tensors.push_back({"v", {s.H, slots, s.Dh}, 1});
  l.scratch_per_row = int64_t(s.H) * slots;  // the step's score row per head
  return l;
}

AttentionDecodeMemory decode_memory(const AttentionSpec& s, const AttentionStateOptions& o, int S, int) {
  // Keys and values (B, H, slots, Dh) and a score row (B, H, slots).
  const double B = o.B, H = s.H, Dh = s.Dh;
  const double slots = s.window > 0 ? double(s.window)
                       : ring_of(s, o) ? std::min<double>(o.window, double(o.max_positions))
                                       : double(o.max_positions);
  const double b = std::min<double>(S, slots);
  AttentionDecodeMemory m;
  m.state = B * H * slots * (2.0 * Dh + 1);
  m.state_name = s.window > 0 ? "sliding-window KV cache" : "KV cache";
  m.state_grows = s.window == 0;
  m.keys = s.window > 0 ? fmt::format("attention.window ({})", s.window) : "";
  m.scratch = ring_of(s, o) ? b * (slots + b) : S * slots;  // softmax_cache_prefill_scratch
  return m;
}

int64_t prefill_scratch_size(const AttentionSpec& s, const AttentionStateOptions& o, int, int S, int) {
  return static_cast<int64_t>(softmax_cache_prefill_scratch(S, static_cast<int>(slots_of(s, o)), ring_of(s, o)));
}

int64_t position_limit(const AttentionSpec& s, const AttentionStateOptions& o) {
  return ring_of(s, o) ? 0 : o.max_positions;
}

std::string move_refusal(const AttentionSpec& s, const AttentionStateOptions& o, int64_t from, int64_t to) {
  // A trained window is a fixed-size state: as with a recurrent one, a move forward follows a
  // restore of the state at `to` (decoder_state_load), which the caller owns.
  if (to > from && s.window == 0)
    return fmt::format("decoder: cannot move to position {} with only {} cached", to, from);
  // A ring that wrapped has overwritten the positions an earlier one would need.
  if (ring_of(s, o) && to < from && from > slots_of(s, o))
    return fmt::format("decoder: cannot move back to position {} from {}: the window of {} has moved on", to, from,
                       slots_of(s, o));
  return "";  // truncating a cache gives exactly the state at `to`
}

const char* save_refusal(const AttentionSpec& s) {
  return s.window > 0 ? "" : "a softmax model's state is a KV cache that grows with the text";
}

std::string state_form(const AttentionSpec& s) {
  const std::string positions = attention_positions_form(s);
  return s.window > 0 ? fmt::format("{}, window {}", positions, s.window) : positions;
}
std::string no_keys(const AttentionSpec&) { return ""; }  // batch, context and layers say it all
// A trained window bounds the decoding state (full attention: batch and positions say it all).
std::string state_keys(const AttentionSpec& s) {
  return s.window > 0 ? fmt::format("attention.window ({})", s.window) : "";
}

template <typename T>
KvCacheView<T> cache_of(const AttentionSpec& s, const AttentionStateView<T>& v) {
  return KvCacheView<T>{v.B,          s.H,          s.Dh,     static_cast<int>(slots_of(s, v.options)),
                        ring_of(s, v.options), v.tensors[0], v.tensors[1], v.scratch};
}

template <typename T>
void random_draw(const AttentionSpec&, uint64_t, uint64_t, int, T*) {}

template <typename T>
void forward(const AttentionCore& core, const AttentionWeights<T>&, T* out, const AttentionInputs<T>& in,
             const AttentionCall<T>& call) {
  softmax_flash_forward(out, call.saved, call.scratch, in.q, in.k, in.v, dims_of(core.spec(), call.B, call.T_len),
                        call.segment_start, core.spec().window);
}

template <typename T>
void backward(const AttentionCore& core, const AttentionWeights<T>&, const AttentionWeights<T>&,
              const AttentionInputGrads<T>& g, const T* dout, const T* out, const AttentionInputs<T>& in,
              const AttentionCall<T>& call) {
  softmax_flash_backward(g.dq, g.dk, g.dv, call.scratch, dout, out, call.saved, in.q, in.k, in.v,
                         dims_of(core.spec(), call.B, call.T_len), call.segment_start, core.spec().window);
}

template <typename T>
void state_init(const AttentionSpec&, const AttentionStateView<T>&, T*, const T*) {}

template <typename T>
void prefill(const AttentionCore& core, const AttentionWeights<T>&, const AttentionStateView<T>& v, T* out,
             const AttentionInputs<T>& in, const AttentionCall<T>& call) {
  int64_t len[1];  // a single row's length, else the call's per-row positions
  const int64_t* lens = call.row_pos0;
  if (!lens) {
    RFA_ASSERT(call.B == 1, "a softmax prefill of {} rows needs each row's position", call.B);
    len[0] = call.pos0;
    lens = len;
  }
  softmax_cache_prefill(out, cache_of(core.spec(), v), call.scratch, in.q, in.k, in.v, call.T_len, lens);
}

template <typename T>
void step(const AttentionCore& core, const AttentionWeights<T>&, const AttentionStateView<T>& v, T* out,
          const AttentionInputs<T>& in, const AttentionRows& rows) {
  softmax_decode_step(out, cache_of(core.spec(), v), in.q, in.k, in.v, rows);
}

template <typename T>
void row_reset(const AttentionStateView<T>&, int) {}  // a row at position 0 reads no slot

template <typename T>
AttentionKernels<T> kernels() {
  return {random_draw<T>, forward<T>, backward<T>, state_init<T>, prefill<T>, step<T>, row_reset<T>};
}

}  // namespace

extern const AttentionKindDef kAttentionKind_softmax;
const AttentionKindDef kAttentionKind_softmax = {AttentionKind::softmax,
                                                 params,
                                                 random_size,
                                                 random_shape,
                                                 reads_n,
                                                 state_grows,
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
                                                 no_keys,
                                                 state_keys,
                                                 kernels<float>(),
                                                 kernels<double>()};

}  // namespace rfa
