#include "decode/decoder.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "core/parallel.h"
#include "decode/decode_kernels.h"
#include "kernels/bf16.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"
#include "layers/embedding.h"
#include "layers/rmsnorm.h"
#include "model/block.h"

namespace rfa {

template <typename T>
Decoder<T>::Decoder(Model<T>& model, const DecoderOptions& o)
    : model_(model), spec_(model.spec), B_(o.batch), S_max_(o.max_segment) {
  const ModelSpec& s = spec_;
  if (B_ <= 0) fail("decoder: batch {} must be positive", B_);
  if (S_max_ <= 0) fail("decoder: max_segment {} must be positive", S_max_);
  const bool bf16 = o.precision == Precision::bf16;
  RFA_ASSERT(!bf16 || model_.precision == Precision::bf16, "a bf16 decoder needs a model built with bf16 copies");
  AttentionStateOptions so;
  so.B = B_;
  so.max_positions = o.max_positions;
  so.window = o.window;
  const int64_t random_per_layer = attention_random_size(s.attn);
  for (int l = 0; l < s.L; ++l)
    states_.push_back(attention_state_create<T>(s.attn, model_.random_fixed() + l * random_per_layer, so));
  if (s.attn.rope && o.max_positions <= 0)
    fail("decoder: a model with RoPE positions needs max_positions (prompt + tokens to generate) for its rotation "
         "table, got {}",
         o.max_positions);
  attention_ = AttentionCore(s.attn, o.max_positions);
  position_limit_ = attention_.position_limit();
  const int64_t state_limit = attention_state_position_limit(states_[0]);
  if (state_limit > 0) position_limit_ = position_limit_ > 0 ? std::min(position_limit_, state_limit) : state_limit;

  const int64_t N = int64_t(B_) * S_max_, C = s.C, Hf = s.Hf, V = s.V;
  scratch_.size = static_cast<size_t>(attention_prefill_scratch_size(attention_, states_[0], B_, S_max_, thread_count()));
  ArenaPlan<T> plan;
  BlockActs<T>& a = acts_;
  struct Slot {
    T** ptr;
    int64_t offset;
  };
  std::vector<Slot> slots;
  auto take = [&](T** p, int64_t n) { slots.push_back({p, plan.take(n)}); };
  for (T** p : {&a.resid_in, &a.attn_norm, &a.q, &a.k, &a.v, &a.attn_out, &a.resid_mid, &a.ffn_norm}) take(p, N * C);
  take(&a.attn_rstd, N);
  take(&a.ffn_rstd, N);
  take(&a.ffn_gate_up, N * 2 * Hf);
  take(&a.ffn_act, N * Hf);
  take(&logits_, N * V);
  take(&last_, int64_t(B_) * V);
  take(&scratch_.data, static_cast<int64_t>(scratch_.size));
  // bf16: n uint16 in ceil(n / 2) elements of T.
  std::vector<std::pair<uint16_t**, int64_t>> halves;
  auto take_half = [&](uint16_t** p, int64_t n) {
    halves.push_back({p, plan.take((n * int64_t(sizeof(uint16_t)) + int64_t(sizeof(T)) - 1) / int64_t(sizeof(T)))});
  };
  if (bf16)
    for (auto [p, n] : {std::pair{&acts_bf16_.attn_norm, N * C}, std::pair{&acts_bf16_.attn_out, N * C},
                        std::pair{&acts_bf16_.ffn_norm, N * C}, std::pair{&acts_bf16_.ffn_act, N * Hf}})
      take_half(p, n);
  arena_ = Arena<T>(plan.size());
  for (const Slot& slot : slots) *slot.ptr = arena_.data() + slot.offset;
  for (auto [p, offset] : halves) *p = reinterpret_cast<uint16_t*>(arena_.data() + offset);
  if constexpr (std::is_same_v<T, float>)
    if (bf16) pack_step_weights();
  a.attn_saved = nullptr;  // prefill: no backward follows
  segment_tokens_.assign(static_cast<size_t>(N), 0);
}

// Packs each weight matrix's bf16 copy for the step's B-row products: the plain
// copy would be reformatted on every product (gemm_bf16.h).
template <typename T>
void Decoder<T>::pack_step_weights() {
  if constexpr (std::is_same_v<T, float>) {
    const ModelSpec& s = spec_;
    const int64_t C = s.C, Hf = s.Hf, V = s.V;
    struct Job {
      const void** slot;
      const uint16_t* weight;
      bool trans;  // weight stored (N, K): the product reads its transpose
      int64_t N, K;
      bool accumulate;
      int64_t offset = 0;
    };
    std::vector<Job> jobs;
    step_bf16_.resize(static_cast<size_t>(s.L));
    for (size_t l = 0; l < step_bf16_.size(); ++l) {
      const BlockWeightsBf16& w = model_.wh.layers[l];
      StepWeightsBf16& p = step_bf16_[l];
      jobs.push_back({&p.wq, w.wq, true, C, C, false});
      jobs.push_back({&p.wk, w.wk, true, C, C, false});
      jobs.push_back({&p.wv, w.wv, true, C, C, false});
      jobs.push_back({&p.wo, w.wo, true, C, C, true});
      jobs.push_back({&p.w13, w.w13, true, 2 * Hf, C, false});
      jobs.push_back({&p.w2, w.w2, false, C, Hf, true});  // W2 (Hf, C) input-major
    }
    jobs.push_back({&step_lm_head_bf16_, model_.wh.lm_head, true, V, C, false});
    int64_t bytes = 0;
    for (Job& j : jobs) {
      j.offset = bytes;
      bytes += arena_round<uint8_t>(gemm_bf16_packed_bytes(j.trans, B_, j.N, j.K, j.accumulate));
    }
    step_packed_ = Arena<uint8_t>(bytes);
    for (Job& j : jobs) {
      *j.slot = step_packed_.data() + j.offset;
      gemm_bf16_pack(j.trans, B_, j.N, j.K, j.accumulate, j.weight, j.trans ? j.K : j.N,
                     step_packed_.data() + j.offset);
    }
  }
}

template <typename T>
void Decoder<T>::reset() {
  for (AttentionState<T>& st : states_) attention_state_reset(st);
  position_ = 0;
  last_logits_ = nullptr;
}

template <typename T>
void Decoder<T>::last_logits_restore(const T* logits) {
  std::memcpy(last_, logits, sizeof(T) * static_cast<size_t>(B_) * spec_.V);
  last_logits_ = last_;
}

template <typename T>
void Decoder<T>::set_position(int64_t p) {
  RFA_ASSERT(p >= 0, "position {}", p);
  for (AttentionState<T>& st : states_) attention_state_truncate(st, p);
  position_ = p;
}

template <typename T>
int64_t Decoder<T>::state_bytes() const {
  int64_t n = 0;
  for (const AttentionState<T>& st : states_) n += attention_state_bytes(st);
  return n;
}

template <typename T>
int64_t Decoder<T>::state_capacity_bytes() const {
  int64_t n = 0;
  for (const AttentionState<T>& st : states_) n += attention_state_capacity(st);
  return n;
}

template <typename T>
const T* Decoder<T>::run(const int32_t* tokens, int S, bool recurrent) {
  const ModelSpec& s = spec_;
  const int64_t N = int64_t(B_) * S;
  if (S <= 0 || S > S_max_) fail("decoder: segment of {} tokens; allowed 1..{} (max_segment)", S, S_max_);
  for (int64_t i = 0; i < N; ++i)
    if (tokens[i] < 0 || tokens[i] >= s.V)
      fail("token id {} at index {} is outside the vocabulary [0, {})", tokens[i], i, s.V);
  if (position_limit_ > 0 && position_ + S > position_limit_)
    fail("decoder: position {} + {} tokens exceeds its max_positions {}; raise max_positions", position_, S,
         position_limit_);
  if (recurrent)
    step_layers(tokens);
  else
    prefill_layers(tokens, S);
  position_ += S;
  if (S == 1) {
    last_logits_ = logits_;
  } else {
    for (int b = 0; b < B_; ++b)
      std::memcpy(last_ + int64_t(b) * s.V, logits_ + (int64_t(b) * S + S - 1) * s.V, sizeof(T) * s.V);
    last_logits_ = last_;
  }
  return logits_;
}

// The training block (model/block.h), every layer on the same buffers: a block's
// output (without x_mid) goes back into resid_in, and the next norm adds x_mid
// (resid_pending), as in model_forward.
template <typename T>
void Decoder<T>::prefill_layers(const int32_t* tokens, int S) {
  const ModelSpec& s = spec_;
  const int64_t N = int64_t(B_) * S;
  BlockActs<T>& a = acts_;
  embedding_forward(a.resid_in, tokens, model_.w.tok_embedding, N, s.C);
  BlockContext<T> ctx;
  ctx.spec = &s;
  ctx.attention = &attention_;
  ctx.attn_scratch = scratch_;
  ctx.B = B_;
  ctx.T_len = S;
  ctx.pos0 = position_;
  const int64_t random_per_layer = attention_random_size(s.attn);
  for (int l = 0; l < s.L; ++l) {
    ctx.random = model_.random_fixed() + l * random_per_layer;
    ctx.state = &states_[static_cast<size_t>(l)];
    ctx.resid_pending = l > 0 ? a.resid_mid : nullptr;
    if (acts_bf16_.attn_norm) {
      ctx.wh = &model_.wh.layers[static_cast<size_t>(l)];
      ctx.ah = &acts_bf16_;
    }
    block_forward(ctx, model_.w.layers[static_cast<size_t>(l)], a, a.resid_in);
  }
  residual_rmsnorm_forward(a.attn_norm, a.attn_rstd, a.resid_in, a.resid_mid, model_.w.final_norm, N, s.C,
                           s.model.norm_eps);
  // logits (N, V) = n (N, C) · lm_headᵀ
  const bool bf16 = acts_bf16_.attn_norm != nullptr;
  mat_product<T>(false, true, N, s.V, s.C, mat_operand_bf16(a.attn_norm, acts_bf16_.attn_norm, N * s.C), s.C,
                 {model_.w.lm_head, bf16 ? model_.wh.lm_head : nullptr}, s.C, T(0), logits_, s.V);
}

// The mirror of block_forward (model/block.cpp) for one token per row, with the
// decode row kernels (serial at small sizes: no thread fork, no BLAS call per
// matrix-vector product) and the attention's one-token step. Same math; the
// decoder tests pin steps to the prefill.
template <typename T>
void Decoder<T>::step_layers(const int32_t* tokens) {
  const ModelSpec& s = spec_;
  const int B = B_, C = s.C, Hf = s.Hf;
  BlockActs<T>& a = acts_;
  T* x = a.resid_in;  // (B, C) the whole residual stream here
  T* n = a.attn_norm;
  // out (B, OC) (+)= in (B, IC) · op(W) on the calling thread: W (OC, IC) read transposed, or
  // W2 (IC, OC) as stored. bf16: `in` converted, against the packed copy of W.
  auto product = [&](T* out, const T* in, const T* W, const void* packed, bool trans, int IC, int OC, bool accumulate) {
    if constexpr (std::is_same_v<T, float>) {
      if (packed) {
        uint16_t* in_bf16 = IC == C ? acts_bf16_.attn_norm : acts_bf16_.ffn_act;  // (B, IC) scratch
        bf16_from_float_serial(in_bf16, in, int64_t(B) * IC);
        gemm_bf16_packed(trans, B, OC, IC, accumulate, in_bf16, packed, out);
        return;
      }
    }
    gemm<T>(false, trans, B, OC, IC, T(1), in, IC, W, trans ? IC : OC, accumulate ? T(1) : T(0), out, OC,
            GemmThreads::one);
  };
  for (int b = 0; b < B; ++b)
    std::memcpy(x + int64_t(b) * C, model_.w.tok_embedding + int64_t(tokens[b]) * C, sizeof(T) * C);
  for (int l = 0; l < s.L; ++l) {
    const BlockWeights<T>& w = model_.w.layers[static_cast<size_t>(l)];
    const StepWeightsBf16 p = step_bf16_.empty() ? StepWeightsBf16{} : step_bf16_[static_cast<size_t>(l)];
    rmsnorm_rows(n, x, w.attn_norm, B, C, s.model.norm_eps);
    product(a.q, n, w.wq, p.wq, true, C, C, false);
    product(a.k, n, w.wk, p.wk, true, C, C, false);
    product(a.v, n, w.wv, p.wv, true, C, C, false);
    attention_step(attention_, w.attn, states_[static_cast<size_t>(l)], a.attn_out,
                   AttentionInputs<T>{a.q, a.k, a.v, n}, position_);
    product(x, a.attn_out, w.wo, p.wo, true, C, C, true);  // x += att · Woᵀ
    rmsnorm_rows(n, x, w.ffn_norm, B, C, s.model.norm_eps);
    product(a.ffn_gate_up, n, w.w13, p.w13, true, C, 2 * Hf, false);
    swiglu_rows(a.ffn_act, a.ffn_gate_up, B, Hf);
    product(x, a.ffn_act, w.w2, p.w2, false, Hf, C, true);  // x += act · W2 (W2 stored (Hf, C))
  }
  rmsnorm_rows(n, x, model_.w.final_norm, B, C, s.model.norm_eps);
  product(logits_, n, model_.w.lm_head, step_lm_head_bf16_, true, C, s.V, false);
}

template <typename T>
const T* Decoder<T>::prefill(const int32_t* tokens, int S) {
  return run(tokens, S, false);
}

template <typename T>
const T* Decoder<T>::step(const int32_t* tokens) {
  return run(tokens, 1, true);
}

template <typename T>
const T* Decoder<T>::prefill_all(const int32_t* tokens, int64_t T_len) {
  if (T_len <= 0) fail("decoder: the prompt is empty; give at least one token");
  // Row b's tokens are tokens[b*T_len ...]; a segment gathers columns [t0, t0+S) of every row.
  for (int64_t t0 = 0; t0 < T_len; t0 += S_max_) {
    const int S = static_cast<int>(std::min<int64_t>(S_max_, T_len - t0));
    if (B_ == 1) {
      prefill(tokens + t0, S);
    } else {
      for (int b = 0; b < B_; ++b)
        std::memcpy(segment_tokens_.data() + size_t(b) * S, tokens + b * T_len + t0, sizeof(int32_t) * S);
      prefill(segment_tokens_.data(), S);
    }
  }
  return last_logits_;
}

template class Decoder<float>;
template class Decoder<double>;

}  // namespace rfa
