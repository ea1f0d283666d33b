// attention_core.h, training side: parameters, random matrices, sizes, forward and
// backward, each through the layer's kind table (attention_kind.h). RoPE is applied
// here, the same for every kind (with document boundaries: each token at its position in
// its own document), and so are the short convolution and the output gate. The decoding
// side is attention_decode.cpp.
#include "attention/attention_core.h"

#include <algorithm>
#include <map>
#include <utility>

#include "attention/attention_kind.h"
#include "attention/output_gate.h"
#include "attention/short_conv.h"
#include "core/error.h"
#include "core/step_profile.h"

namespace rfa {
namespace {

const AttentionKindDef& kind_of(const AttentionSpec& s) { return attention_kind_def(s.kind); }

}  // namespace

std::vector<AttentionParam> attention_params(const AttentionSpec& s) {
  std::vector<AttentionParam> p = kind_of(s).params(s);
  if (s.short_conv > 0)  // (K, C) each, the identity at init (tap 0 all ones), no weight decay (short_conv.h)
    for (const char* name : {"conv_q", "conv_k", "conv_v"})
      p.push_back({name, {s.short_conv, s.C()}, false, ParamInit::first_row(1.0, s.C())});
  if (s.output_gate) {  // the per-head norm's weight (C), 1 and no decay as the model's norms; W_g (C, C)
    p.push_back({"out_norm", {s.C()}, false, ParamInit::constant(1.0)});
    p.push_back({"out_gate", {s.C(), s.C()}, true, ParamInit::normal(1.0)});  // as wq, wk, wv
  }
  RFA_ASSERT(p.size() <= size_t(kAttentionMaxParams), "an attention kind owns {} tensors, at most {} fit", p.size(),
             kAttentionMaxParams);
  return p;
}

template <typename T>
AttentionWeights<T> attention_weights_view(const AttentionSpec& s, const ParamTable& table, const std::string& prefix,
                                           T* base) {
  AttentionWeights<T> w;
  const std::vector<AttentionParam> params = attention_params(s);
  for (size_t i = 0; i < params.size(); ++i) w.tensors[i] = base + table.get(prefix + params[i].name).offset;
  return w;
}

int64_t attention_random_size(const AttentionSpec& s) { return kind_of(s).random_size(s); }

std::vector<int64_t> attention_random_shape(const AttentionSpec& s) { return kind_of(s).random_shape(s); }

template <typename T>
void attention_random_draw(const AttentionSpec& s, uint64_t seed, uint64_t step, int layer, T* out) {
  if (attention_random_size(s) > 0) kind_of(s).kernels<T>().random_draw(s, seed, step, layer, out);
}

AttentionCore::AttentionCore(const AttentionSpec& spec, int64_t max_positions)
    : spec_(spec), kind_(&kind_of(spec)), conv_param_(static_cast<int>(kind_->params(spec).size())) {
  if (spec_.rope) rope_ = std::make_shared<const RopeTable>(RopeTable::build(max_positions, spec_.Dh, spec_.rope_theta));
}

AttentionCore::AttentionCore(const AttentionSpec& spec, std::shared_ptr<const RopeTable> rope)
    : spec_(spec), kind_(&kind_of(spec)), conv_param_(static_cast<int>(kind_->params(spec).size())),
      rope_(std::move(rope)) {
  RFA_ASSERT(!spec_.rope || (rope_ && rope_->Dh == spec_.Dh && rope_->theta == spec_.rope_theta),
             "a RoPE core needs a table of its head size and theta");
}

std::vector<AttentionCore> attention_cores_make(const std::vector<AttentionSpec>& specs, int64_t max_positions) {
  std::map<std::pair<int, double>, std::shared_ptr<const RopeTable>> tables;  // (Dh, theta) -> table
  std::vector<AttentionCore> cores;
  for (const AttentionSpec& s : specs) {
    std::shared_ptr<const RopeTable> rope;
    if (s.rope) {
      std::shared_ptr<const RopeTable>& t = tables[{s.Dh, s.rope_theta}];
      if (!t) t = std::make_shared<const RopeTable>(RopeTable::build(max_positions, s.Dh, s.rope_theta));
      rope = t;
    }
    cores.emplace_back(s, rope);
  }
  return cores;
}

bool attention_reads_n(const AttentionSpec& s) { return kind_of(s).reads_n(s) || s.output_gate; }

bool attention_state_grows(const AttentionSpec& s) { return kind_of(s).state_grows(s); }

double attention_forward_flops_per_token(const AttentionSpec& s, int64_t T) {
  // The short convolution: K multiply-adds per channel of q, k and v. The output gate: z = n W_gᵀ
  // (C² multiply-adds), then about 8 per channel (the norm, SiLU, two products).
  const double conv = s.short_conv > 0 ? 6.0 * s.short_conv * s.C() : 0.0;
  const double gate = s.output_gate ? 2.0 * s.C() * s.C() + 8.0 * s.C() : 0.0;
  return kind_of(s).forward_flops_per_token(s, T) + conv + gate;
}

double attention_backward_flops_per_token(const AttentionSpec& s, int64_t T) {
  // The convolution and the gate: twice their forward (input and weight gradients).
  const double conv = s.short_conv > 0 ? 12.0 * s.short_conv * s.C() : 0.0;
  const double gate = s.output_gate ? 4.0 * s.C() * s.C() + 16.0 * s.C() : 0.0;
  return kind_of(s).backward_flops_per_token(s, T) + conv + gate;
}

std::vector<int64_t> attention_carry_shape(const AttentionSpec& s) {
  const SmallShape shape = kind_of(s).carry_shape(s);
  if (shape.rank == 0 || s.short_conv == 0) return shape.vector();
  return {shape.size() + short_conv_history_size(s)};  // flat: the layout is not one row after another
}

int64_t attention_carry_size(const AttentionSpec& s, int B) {
  const SmallShape shape = kind_of(s).carry_shape(s);  // no allocation: model_forward asks every layer
  return shape.rank == 0 ? 0 : B * (shape.size() + short_conv_history_size(s));
}

// The saved activations: the kind's, then (short conv) the convolution's ext rows, then (output
// gate) the kind's output o and the gate's z.
int64_t attention_saved_size(const AttentionSpec& s, int B, int T) {
  return kind_of(s).saved_size(s, B, T) + short_conv_ext_size(s, B, T) + output_gate_saved_size(s, B, T);
}

// The output gate's buffers first (their size is known to every call), then the kind's.
int64_t attention_scratch_size(const AttentionSpec& s, int B, int T, int threads) {
  return output_gate_scratch_size(s, B, T) + kind_of(s).scratch_size(s, B, T, threads);
}

namespace {

// The call the kind sees: the scratch after the output gate's part.
template <typename T>
AttentionCall<T> kind_call(const AttentionSpec& s, const AttentionCall<T>& call) {
  AttentionCall<T> k = call;
  const size_t gate = static_cast<size_t>(output_gate_scratch_size(s, call.B, call.T_len));
  RFA_ASSERT(call.scratch.size >= gate, "attention: scratch of {} elements, the output gate takes {}",
             call.scratch.size, gate);
  k.scratch = Workspace<T>{call.scratch.data + gate, call.scratch.size - gate};
  return k;
}

// The output gate's o and z in the saved activations, after the kind's and the convolution's.
template <typename T>
T* gate_saved(const AttentionCore& core, const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  return call.saved + core.kind().saved_size(s, call.B, call.T_len) + short_conv_ext_size(s, call.B, call.T_len);
}

// Bytes the kind's own forward or backward moves, each (B, T, C) operand once: the forward reads q,
// k, v (and n when the kind reads it) and writes its output and, when a backward follows, its saved
// activations; the backward reads dout, out, q, k, v (n) and the saved activations and writes dq, dk,
// dv (dn). Its parameters are small beside these; the convolution and the output gate count theirs.
template <typename T>
double kind_bytes(const AttentionSpec& s, const AttentionCall<T>& call, bool backward) {
  const double operand = double(sizeof(T)) * call.B * call.T_len * s.C();
  const int reads_n = kind_of(s).reads_n(s) ? 1 : 0;
  const double saved = call.saved ? double(sizeof(T)) * kind_of(s).saved_size(s, call.B, call.T_len) : 0.0;
  return (backward ? 8 + 2 * reads_n : 4 + reads_n) * operand + saved;
}

}  // namespace

std::string attention_activation_keys(const AttentionSpec& s) { return kind_of(s).activation_keys(s); }

std::string attention_state_keys(const AttentionSpec& s) { return kind_of(s).state_keys(s); }

template <typename T>
void attention_forward(const AttentionCore& core, const AttentionWeights<T>& w, T* out, const AttentionInputs<T>& in,
                       const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  RFA_ASSERT(call.scratch.data != nullptr, "attention forward needs its scratch");
  RFA_ASSERT(call.row_pos0 == nullptr, "training calls start every row at pos0");
  RFA_ASSERT(attention_carry_size(s, 1) > 0 || (!call.state_in && !call.state_out),
             "this attention kind carries no state between segments");
  const double tokens = double(call.B) * call.T_len;
  // The kind's own work; the convolution and the output gate have their own rows (the scopes inside).
  ProfileScope profile(ProfiledKernel::attention_forward, kind_of(s).forward_flops_per_token(s, call.T_len) * tokens,
                       kind_bytes(s, call, false));
  if (s.short_conv > 0) {  // q, k, v = conv(q_pre, k_pre, v_pre), in place, before RoPE
    const int i = core.conv_param();
    const SmallShape carry = core.kind().carry_shape(s);
    const int64_t kind_carry = carry.rank == 0 ? 0 : call.B * carry.size();  // the history follows the kind's state
    ShortConvCall<T> conv;
    conv.w[0] = w[i], conv.w[1] = w[i + 1], conv.w[2] = w[i + 2];
    conv.x[0] = in.q, conv.x[1] = in.k, conv.x[2] = in.v;
    conv.B = call.B;
    conv.T_len = call.T_len;
    // Its inputs go to the saved activations (a forward with no backward is attention_prefill's).
    RFA_ASSERT(call.saved != nullptr, "the short convolution's training forward needs its saved activations");
    conv.ext = call.saved + core.kind().saved_size(s, call.B, call.T_len);
    if (call.state_in) conv.hist_in = call.state_in + kind_carry;
    if (call.state_out) conv.hist_out = call.state_out + kind_carry;
    conv.hist_stride = short_conv_history_size(s);
    conv.starts = call.segment_start;  // a document's first token sees nothing before it
    // x read, ext written (and read), y written: 3 operands of (B, T, C) for each of q, k, v
    ProfileScope conv_profile(ProfiledKernel::short_conv, 2.0 * s.short_conv * 3 * s.C() * tokens,
                              sizeof(T) * 9.0 * s.C() * tokens);
    short_conv_apply(s, conv);
  }
  if (s.rope && call.segment_start) {  // each token at its position in its own document
    rope_forward_segments(in.q, in.q, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0, call.segment_start);
    rope_forward_segments(in.k, in.k, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0, call.segment_start);
  } else if (s.rope) {  // q = R q_pre, k = R k_pre, in place
    rope_forward(in.q, in.q, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0);
    rope_forward(in.k, in.k, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0);
  }
  if (!s.output_gate) {
    core.kind().kernels<T>().forward(core, w, out, in, call);
    return;
  }
  // The kind's output o goes to the saved activations (a forward with no backward: to out, gated in
  // place, z in the scratch); then out = RMSNorm_h(o) * w_norm * SiLU(n W_gᵀ) (output_gate.h).
  RFA_ASSERT(in.n != nullptr, "the output gate reads the normed input n");
  const int64_t N = int64_t(call.B) * call.T_len;
  T* o = call.saved ? gate_saved(core, call) : out;
  T* z = call.saved ? o + N * s.C() : call.scratch.data;
  core.kind().kernels<T>().forward(core, w, o, in, kind_call(s, call));
  const int g = core.gate_param();
  output_gate_apply(s, w[g], w[g + 1], out, o, z, in.n, N, GemmThreads::pool, in.gate_packed);
}

template <typename T>
void attention_backward(const AttentionCore& core, const AttentionWeights<T>& w, const AttentionWeights<T>& dw,
                        const AttentionInputGrads<T>& g, const T* dout, const T* out, const AttentionInputs<T>& in,
                        const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  const double tokens = double(call.B) * call.T_len;
  ProfileScope profile(ProfiledKernel::attention_backward, kind_of(s).backward_flops_per_token(s, call.T_len) * tokens,
                       kind_bytes(s, call, true));
  if (s.output_gate) {  // d o (the kind's dout) and dz first; the kind then reads its own output o
    RFA_ASSERT(in.n != nullptr && g.dn != nullptr, "the output gate's backward reads n and writes dn");
    const int64_t N = int64_t(call.B) * call.T_len;
    const int i = core.gate_param();
    const T* o = gate_saved(core, call);
    output_gate_apply_backward(s, w[i], dw[i], dw[i + 1], call.scratch.data, dout, o, o + N * s.C(), in.n, N);
    core.kind().kernels<T>().backward(core, w, dw, g, call.scratch.data, o, in, kind_call(s, call));
    // dn: the kind overwrote it when it reads n (RFA-Gate's gate); else the gate's part is all of it
    output_gate_apply_backward_dn(s, w[i + 1], call.scratch.data, g.dn, core.kind().reads_n(s), N);
  } else {
    core.kind().kernels<T>().backward(core, w, dw, g, dout, out, in, call);
  }
  if (s.rope && call.segment_start) {
    rope_backward_segments(g.dq, g.dq, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0, call.segment_start);
    rope_backward_segments(g.dk, g.dk, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0, call.segment_start);
  } else if (s.rope) {  // q = R q_pre: d q_pre = Rᵀ dq, rotated in place (no zeroed buffer)
    rope_backward(g.dq, g.dq, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0);
    rope_backward(g.dk, g.dk, core.rope(), call.B, call.T_len, s.H, s.Dh, call.pos0);
  }
  if (s.short_conv > 0) {  // q = conv(q_pre): d q_pre from dq in place, dw added (short_conv.h)
    const int i = core.conv_param();
    const T* const cw[3] = {w[i], w[i + 1], w[i + 2]};
    T* const cdw[3] = {dw[i], dw[i + 1], dw[i + 2]};
    T* const dx[3] = {g.dq, g.dk, g.dv};
    const T* ext = call.saved + core.kind().saved_size(s, call.B, call.T_len);
    // dy read and dx written in place, ext read: 2 operands of (B, T, C) for each of q, k, v
    ProfileScope conv_profile(ProfiledKernel::short_conv, 4.0 * s.short_conv * 3 * s.C() * tokens,
                              sizeof(T) * 6.0 * s.C() * tokens);
    short_conv_apply_backward(s, cw, cdw, dx, ext, call.B, call.T_len, call.segment_start);
  }
}

#define RFA_INSTANTIATE(T)                                                                                       \
  template AttentionWeights<T> attention_weights_view<T>(const AttentionSpec&, const ParamTable&,                \
                                                         const std::string&, T*);                                 \
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
