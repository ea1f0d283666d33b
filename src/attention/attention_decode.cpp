// attention_core.h, decoding side: a layer's state (the kind's per-row tensors, carved
// from one allocation), its rows, prefill and step through the kind's table, RoPE at
// each row's position, the short convolution and the output gate, and what a saved state holds.
#include <algorithm>
#include <cstring>

#include "attention/attention_core.h"
#include "attention/attention_kind.h"
#include "attention/output_gate.h"
#include "attention/short_conv.h"
#include "core/error.h"
#include "core/step_profile.h"

namespace rfa {

template <typename T>
AttentionState<T>::AttentionState(const AttentionSpec& s, const T* random, const AttentionStateOptions& o)
    : spec_(s), kind_(&attention_kind_def(s.kind)), options_(o) {
  if (o.B <= 0) fail("decoder: batch {} must be positive", o.B);
  const AttentionStateLayout layout = kind_->state_layout(s, o);  // validates the options
  tensors_ = layout.tensors;
  if (short_conv_history_size(s) > 0) {  // the last K-1 inputs of q, k, v, in use whole at any position
    conv_tensor_ = static_cast<int>(tensors_.size());
    tensors_.push_back({"short_conv", {3, s.short_conv - 1, s.C()}, -1});
  }
  RFA_ASSERT(tensors_.size() <= size_t(kAttentionMaxStateTensors), "{} state tensors, at most {}", tensors_.size(),
             kAttentionMaxStateTensors);
  int64_t at = 0;
  for (const AttentionStateTensor& t : tensors_) {
    offsets_.push_back(at);
    at += int64_t(o.B) * t.size();
    row_size_ += t.size();
  }
  data_ = Arena<T>(at);  // zeros
  constants_.assign(static_cast<size_t>(layout.constants), T(0));
  scratch_per_row_ = layout.scratch_per_row;
  scratch_.assign(static_cast<size_t>(int64_t(o.B) * scratch_per_row_), T(0));
  if (s.output_gate) gate_scratch_.assign(static_cast<size_t>(int64_t(o.B) * s.C()), T(0));  // the step's z
  kind_->kernels<T>().state_init(s, view(0, o.B), constants_.data(), random);
}

template <typename T>
AttentionStateView<T> AttentionState<T>::view(int b0, int n) {
  RFA_ASSERT(b0 >= 0 && n >= 0 && b0 + n <= options_.B, "state rows [{}, {}) of {}", b0, b0 + n, options_.B);
  AttentionStateView<T> v;
  v.B = n;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    v.sizes[i] = tensors_[i].size();
    v.tensors[i] = data_.data() + offsets_[i] + b0 * v.sizes[i];
  }
  v.constants = constants_.data();
  v.scratch = scratch_.data() + b0 * scratch_per_row_;
  v.scratch_per_row = scratch_per_row_;
  v.options = options_;
  return v;
}

template <typename T>
T* AttentionState<T>::tensor_row(int i, int b) {
  RFA_ASSERT(i >= 0 && size_t(i) < tensors_.size() && b >= 0 && b < options_.B, "state tensor {} row {}", i, b);
  return data_.data() + offsets_[static_cast<size_t>(i)] + b * tensors_[static_cast<size_t>(i)].size();
}

template <typename T>
const T* AttentionState<T>::tensor_row(int i, int b) const {
  return const_cast<AttentionState<T>*>(this)->tensor_row(i, b);
}

template <typename T>
void AttentionState<T>::row_save(int b, T* out) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const int64_t n = tensors_[i].size();
    std::memcpy(out, tensor_row(int(i), b), sizeof(T) * static_cast<size_t>(n));
    out += n;
  }
}

template <typename T>
void AttentionState<T>::row_restore(int b, const T* in) {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const int64_t n = tensors_[i].size();
    std::memcpy(tensor_row(int(i), b), in, sizeof(T) * static_cast<size_t>(n));
    in += n;
  }
}

namespace {

// A tensor's row as (outer, slots, inner) around its position axis, and the slots in use.
struct SlotBlocks {
  int64_t outer = 1, slots = 1, inner = 1, used = 1;
};

SlotBlocks slot_blocks(const AttentionStateTensor& t, int64_t pos) {
  SlotBlocks s;
  if (t.position_axis < 0) {
    s.inner = t.size();
    return s;
  }
  const size_t a = static_cast<size_t>(t.position_axis);
  for (size_t d = 0; d < a; ++d) s.outer *= t.shape[d];
  s.slots = t.shape[a];
  for (size_t d = a + 1; d < t.shape.size(); ++d) s.inner *= t.shape[d];
  s.used = std::clamp<int64_t>(pos, 0, s.slots);
  return s;
}

}  // namespace

template <typename T>
int64_t AttentionState<T>::row_size_in_use(int64_t pos) const {
  int64_t n = 0;
  for (const AttentionStateTensor& t : tensors_) {
    const SlotBlocks s = slot_blocks(t, pos);
    n += s.outer * s.used * s.inner;
  }
  return n;
}

template <typename T>
void AttentionState<T>::row_save_in_use(int b, int64_t pos, T* out) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const SlotBlocks s = slot_blocks(tensors_[i], pos);
    const T* row = tensor_row(int(i), b);
    if (s.used == 0) continue;  // a cache with nothing in it: no bytes (and out may be null)
    for (int64_t o = 0; o < s.outer; ++o) {
      const size_t n = static_cast<size_t>(s.used * s.inner);
      std::memcpy(out, row + o * s.slots * s.inner, sizeof(T) * n);
      out += n;
    }
  }
}

template <typename T>
void AttentionState<T>::row_restore_in_use(int b, int64_t pos, const T* in) {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const SlotBlocks s = slot_blocks(tensors_[i], pos);
    T* row = tensor_row(int(i), b);
    if (s.used == 0) continue;  // nothing in use (and in may be null)
    for (int64_t o = 0; o < s.outer; ++o) {
      const size_t n = static_cast<size_t>(s.used * s.inner);
      std::memcpy(row + o * s.slots * s.inner, in, sizeof(T) * n);
      in += n;
    }
  }
}

template <typename T>
void AttentionState<T>::row_reset(int b) {
  RFA_ASSERT(b >= 0 && b < options_.B, "state row {} of {}", b, options_.B);
  kind_->kernels<T>().row_reset(view(0, options_.B), b);
  if (conv_tensor_ >= 0) {
    T* h = tensor_row(conv_tensor_, b);
    std::fill(h, h + tensors_[static_cast<size_t>(conv_tensor_)].size(), T(0));
  }
}

template <typename T>
int64_t attention_state_bytes(const AttentionState<T>& st, const int64_t* pos) {
  // Each tensor's filled slots (AttentionStateTensor::position_axis), the others whole.
  int64_t n = 0;
  for (int b = 0; b < st.rows(); ++b) n += st.row_size_in_use(pos[b]);
  return n * static_cast<int64_t>(sizeof(T));
}

template <typename T>
int64_t attention_state_capacity(const AttentionState<T>& st) {
  return int64_t(st.rows()) * st.row_size() * static_cast<int64_t>(sizeof(T));
}

int64_t attention_state_position_limit(const AttentionSpec& s, const AttentionStateOptions& o) {
  return attention_kind_def(s.kind).position_limit(s, o);
}

std::string attention_state_move_refusal(const AttentionSpec& s, const AttentionStateOptions& o, int64_t from,
                                         int64_t to) {
  return attention_kind_def(s.kind).move_refusal(s, o, from, to);
}

int64_t attention_prefill_scratch_size(const AttentionSpec& s, const AttentionStateOptions& o, int B, int S,
                                       int threads) {
  const int64_t kind = attention_kind_def(s.kind).prefill_scratch_size(s, o, B, S, threads);
  // The convolution's ext rows borrow the scratch before the kind's prefill uses it, the output
  // gate's z (B, S, C) after.
  const int64_t conv = s.short_conv > 0 ? short_conv_ext_size(s, B, S) : 0;
  const int64_t gate = s.output_gate ? int64_t(B) * S * s.C() : 0;
  return std::max({kind, conv, gate});
}

template <typename T>
void attention_prefill(const AttentionCore& core, const AttentionWeights<T>& w, AttentionState<T>& st, int b0, T* out,
                       const AttentionInputs<T>& in, const AttentionCall<T>& call) {
  const AttentionSpec& s = core.spec();
  RFA_ASSERT(call.segment_start == nullptr,
             "prefill takes no document boundaries: end the prefill before a document and reset the row");
  if (s.short_conv > 0) {  // q, k, v convolved in place, each row continuing its own history
    const int i = core.conv_param();
    ShortConvCall<T> conv;
    conv.w[0] = w[i], conv.w[1] = w[i + 1], conv.w[2] = w[i + 2];
    conv.x[0] = in.q, conv.x[1] = in.k, conv.x[2] = in.v;
    conv.B = call.B;
    conv.T_len = call.T_len;
    conv.ext = call.scratch.data;
    RFA_ASSERT(call.scratch.size >= size_t(short_conv_ext_size(s, call.B, call.T_len)),
               "short conv: prefill scratch of {} elements", call.scratch.size);
    if (st.conv_tensor() >= 0) {
      conv.hist_in = conv.hist_out = st.tensor_row(st.conv_tensor(), b0);
      conv.hist_stride = short_conv_history_size(s);
    }
    short_conv_apply(s, conv);
  }
  if (s.rope)  // each row at its absolute positions
    for (int b = 0; b < call.B; ++b) {
      const size_t row = static_cast<size_t>(b) * call.T_len * s.C();
      rope_forward(in.q + row, in.q + row, core.rope(), 1, call.T_len, s.H, s.Dh, call.pos0_of(b));
      rope_forward(in.k + row, in.k + row, core.rope(), 1, call.T_len, s.H, s.Dh, call.pos0_of(b));
    }
  core.kind().kernels<T>().prefill(core, w, st.view(b0, call.B), out, in, call);
  if (s.output_gate) {  // out gated in place, z in the scratch the kind is done with
    const int64_t N = int64_t(call.B) * call.T_len;
    RFA_ASSERT(in.n != nullptr && call.scratch.size >= size_t(N * s.C()), "output gate: n and a prefill scratch of {} "
               "elements", call.scratch.size);
    const int g = core.gate_param();
    output_gate_apply(s, w[g], w[g + 1], out, out, call.scratch.data, in.n, N, GemmThreads::pool, in.gate_packed);
  }
}

namespace {

// The step of `rows`; threads: the output gate's product on the pool or on this thread.
// gate_z: the output gate's (rows.n, C) scratch.
template <typename T>
void step_rows(const AttentionCore& core, const AttentionWeights<T>& w, AttentionState<T>& st, T* out,
               const AttentionInputs<T>& in, const AttentionRows& rows, T* gate_z, GemmThreads threads) {
  const AttentionSpec& s = core.spec();
  // --profile (rfa bench decode): the bytes of the rows' states the step moves, a recurrent
  // state read and written whole, a KV cache's filled slots read (its one new slot not counted).
  // The short convolution's history is counted in its own row (below), not here.
  double state_bytes = 0;
  if (step_profile_enabled()) {
    const int64_t conv_history = st.conv_tensor() >= 0 ? short_conv_history_size(s) : 0;
    for (int i = 0; i < rows.n; ++i) state_bytes += double(st.row_size_in_use(rows.pos[i]) - conv_history);
    state_bytes *= double(sizeof(T)) * (attention_state_grows(s) ? 1 : 2);
  }
  const ProfileScope profile(ProfiledKernel::attention_step, 0, state_bytes);
  if (s.short_conv > 0) {
    // q, k and v's rows read and written, their K-1 rows of history read and written.
    const ProfileScope conv_profile(ProfiledKernel::short_conv, 2.0 * s.short_conv * 3 * s.C() * rows.n,
                                    sizeof(T) * 2.0 * s.short_conv * 3 * s.C() * rows.n);
    const int i = core.conv_param();
    const T* const cw[3] = {w[i], w[i + 1], w[i + 2]};
    T* const x[3] = {in.q, in.k, in.v};
    T* hist = st.conv_tensor() >= 0 ? st.tensor_row(st.conv_tensor(), 0) : nullptr;
    short_conv_apply_step(s, cw, x, hist, short_conv_history_size(s), rows);
  }
  if (s.rope) {
    rope_rows(in.q, core.rope(), rows.n, s.H, s.Dh, rows.pos);
    rope_rows(in.k, core.rope(), rows.n, s.H, s.Dh, rows.pos);
  }
  core.kind().kernels<T>().step(core, w, st.view(0, st.rows()), out, in, rows);
  if (s.output_gate) {  // the listed rows' out gated in place; few rows: serial products (gemm.h)
    RFA_ASSERT(in.n != nullptr && rows.n <= st.rows(), "output gate: n of {} rows", rows.n);
    const int g = core.gate_param();
    RFA_ASSERT(in.gate_packed != nullptr, "attention step: the output gate's packed W_g is missing");
    output_gate_apply(s, w[g], w[g + 1], out, out, gate_z, in.n, rows.n, threads, in.gate_packed);
  }
}

}  // namespace

template <typename T>
void attention_step(const AttentionCore& core, const AttentionWeights<T>& w, AttentionState<T>& st, T* out,
                    const AttentionInputs<T>& in, const AttentionRows& rows) {
  step_rows(core, w, st, out, in, rows, st.gate_scratch(), GemmThreads::pool);
}

template <typename T>
void attention_step_part(const AttentionCore& core, const AttentionWeights<T>& w, AttentionState<T>& st, T* out,
                         const AttentionInputs<T>& in, const AttentionRows& rows, int r0, int r1) {
  RFA_ASSERT(0 <= r0 && r0 <= r1 && r1 <= rows.n, "attention step: part [{}, {}) of {} rows", r0, r1, rows.n);
  if (r0 == r1) return;
  const int64_t at = int64_t(r0) * core.spec().C();
  const AttentionInputs<T> part{in.q + at, in.k + at, in.v + at, in.n ? in.n + at : nullptr, in.gate_packed};
  T* gate_z = st.gate_scratch() ? st.gate_scratch() + at : nullptr;
  step_rows(core, w, st, out + at, part, rows.part(r0, r1), gate_z, GemmThreads::one);
}

std::string attention_state_save_refusal(const AttentionSpec& s) { return attention_kind_def(s.kind).save_refusal(s); }

std::string attention_state_form(const AttentionSpec& s) {
  const std::string form = attention_kind_def(s.kind).state_form(s);
  const std::string conv = s.short_conv > 0 ? fmt::format(", short conv {}", s.short_conv) : std::string();
  return form + conv + (s.output_gate ? ", output gate" : "");
}

#define RFA_INSTANTIATE(T)                                                                                       \
  template class AttentionState<T>;                                                                              \
  template int64_t attention_state_bytes<T>(const AttentionState<T>&, const int64_t*);                           \
  template int64_t attention_state_capacity<T>(const AttentionState<T>&);                                        \
  template void attention_prefill<T>(const AttentionCore&, const AttentionWeights<T>&, AttentionState<T>&, int, T*, \
                                     const AttentionInputs<T>&, const AttentionCall<T>&);                        \
  template void attention_step<T>(const AttentionCore&, const AttentionWeights<T>&, AttentionState<T>&, T*,      \
                                  const AttentionInputs<T>&, const AttentionRows&);                             \
  template void attention_step_part<T>(const AttentionCore&, const AttentionWeights<T>&, AttentionState<T>&, T*, \
                                       const AttentionInputs<T>&, const AttentionRows&, int, int);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
