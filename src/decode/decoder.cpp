#include "decode/decoder.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/parallel.h"
#include "decode/decode_kernels.h"
#include "decode/decode_step_attention.h"
#include "decode/softmax_cache_prefill.h"
#include "kernels/gemm.h"
#include "layers/embedding.h"
#include "layers/linear.h"
#include "layers/rmsnorm.h"
#include "layers/swiglu.h"

namespace rfa {

template <typename T>
Decoder<T>::Decoder(Model<T>& model, const DecoderOptions& o)
    : model_(model), spec_(model.spec), B_(o.batch), S_max_(o.max_segment) {
  const ModelSpec& s = spec_;
  if (B_ <= 0) fail("decoder: batch {} must be positive", B_);
  if (S_max_ <= 0) fail("decoder: max_segment {} must be positive", S_max_);
  if (s.is_rfa()) {
    rfa_config_ = rfa_config_from(s.attention);
    for (int l = 0; l < s.L; ++l) rfa_.push_back(rfa_state_create<T>(rfa_config_, B_, s.H, s.Dh));
    // No position limit: a table of one segment's rows slides along the text (run() rebases it).
    if (s.rope) rope_ = RopeTable::build(S_max_, s.Dh, s.attention.rope_theta);
  } else {
    if (o.max_positions <= 0)
      fail("decoder: a softmax model needs max_positions (prompt + tokens to generate) for its KV cache, got {}",
           o.max_positions);
    if (o.max_positions > (int64_t(1) << 31) - 1) fail("decoder: max_positions {} too large", o.max_positions);
    if (o.window < 0) fail("decoder: window {} must be >= 0 (0 = the whole text)", o.window);
    max_positions_ = o.max_positions;
    // Windowed: W slots allocated once, whatever the length of the text.
    const bool ring = o.window > 0;
    const int slots = static_cast<int>(ring ? std::min<int64_t>(o.window, o.max_positions) : o.max_positions);
    for (int l = 0; l < s.L; ++l) kv_.push_back(kv_cache_create<T>(B_, s.H, s.Dh, slots, ring));
    if (s.rope) rope_ = RopeTable::build(o.max_positions, s.Dh, s.attention.rope_theta);
  }
  const int64_t N = int64_t(B_) * S_max_, C = s.C, Hf = s.Hf, V = s.V;
  if (s.is_rfa()) {
    AttentionDims d{B_, S_max_, s.H, s.Dh};
    workspace_size_ = static_cast<int64_t>(rfa_workspace_size(rfa_config_, d, thread_count()));
  } else {
    workspace_size_ =
        static_cast<int64_t>(softmax_cache_prefill_scratch(S_max_, kv_[0].max_len, kv_[0].ring));
  }
  ArenaPlan<T> plan;
  const int64_t ox = plan.take(N * C), on = plan.take(N * C), oq = plan.take(N * C), ok = plan.take(N * C),
                ov = plan.take(N * C), oa = plan.take(N * C), og = plan.take(N * 2 * Hf), oact = plan.take(N * Hf),
                orstd = plan.take(N), ol = plan.take(N * V), olast = plan.take(int64_t(B_) * V),
                ows = plan.take(workspace_size_), ort = plan.take(model.random_size);
  arena_ = Arena<T>(plan.size());
  T* base = arena_.data();
  x_ = base + ox, n_ = base + on, q_ = base + oq, k_ = base + ok, v_ = base + ov, att_ = base + oa;
  gate_up_ = base + og, act_ = base + oact, rstd_ = base + orstd, logits_ = base + ol, last_ = base + olast;
  workspace_ = base + ows;
  random_t_ = base + ort;
  const int64_t per_layer = int64_t(s.H) * s.D * s.Dh;
  for (int l = 0; l < s.L && s.is_rfa(); ++l)
    rfa_random_transpose(random_t_ + l * per_layer, model_.random_fixed() + l * per_layer, s.H, s.D, s.Dh);
  segment_tokens_.assign(static_cast<size_t>(N), 0);
}

template <typename T>
void Decoder<T>::reset() {
  for (RfaState<T>& st : rfa_) rfa_state_reset(st);
  for (KvCache<T>& kv : kv_) kv_cache_reset(kv);
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
  if (!kv_.empty())
    for (KvCache<T>& kv : kv_) {
      if (p > kv.len) fail("decoder: cannot move to position {} with only {} cached", p, kv.len);
      // A ring that wrapped has overwritten the positions an earlier one would need.
      if (kv.ring && p < kv.len && kv.len > kv.max_len)
        fail("decoder: cannot move back to position {} from {}: the window of {} has moved on", p, kv.len,
             kv.max_len);
      kv.len = static_cast<int>(p);  // truncating a cache gives exactly the state at p
    }
  position_ = p;
}

template <typename T>
int64_t Decoder<T>::state_bytes() const {
  int64_t n = 0;
  for (const RfaState<T>& st : rfa_) n += static_cast<int64_t>(st.S.size());
  for (const KvCache<T>& kv : kv_) n += 2 * int64_t(kv.B) * kv.H * kv_cache_filled(kv) * kv.Dh;
  return n * static_cast<int64_t>(sizeof(T));
}

template <typename T>
int64_t Decoder<T>::state_capacity_bytes() const {
  int64_t n = 0;
  for (const RfaState<T>& st : rfa_) n += static_cast<int64_t>(st.S.size());
  for (const KvCache<T>& kv : kv_) n += static_cast<int64_t>(kv.k.size() + kv.v.size());
  return n * static_cast<int64_t>(sizeof(T));
}

template <typename T>
void Decoder<T>::attention(int l, int S, bool recurrent) {
  const ModelSpec& s = spec_;
  const BlockWeights<T>& w = model_.w.layers[static_cast<size_t>(l)];
  if (s.is_rfa()) {
    RfaParams<T> p;
    p.sigma = w.sigma;
    p.gate_w = w.gate_w;
    p.gate_b = w.gate_b;
    p.W = model_.random_fixed() + int64_t(l) * s.H * s.D * s.Dh;  // (H, D, Dh) fixed evaluation draw
    RfaInputs<T> in{q_, k_, v_, n_};
    if (recurrent) {
      rfa_decode_step(att_, rfa_[static_cast<size_t>(l)], in, p, random_t_ + int64_t(l) * s.H * s.D * s.Dh,
                      rfa_config_);
    } else {
      AttentionDims d{B_, S, s.H, s.Dh};
      rfa_prefill(att_, rfa_[static_cast<size_t>(l)], Workspace<T>{workspace_, static_cast<size_t>(workspace_size_)},
                  in, p, rfa_config_, d);
    }
    return;
  }
  if (recurrent)
    softmax_decode_step(att_, kv_[static_cast<size_t>(l)], q_, k_, v_);
  else
    softmax_cache_prefill(att_, kv_[static_cast<size_t>(l)], Workspace<T>{workspace_, static_cast<size_t>(workspace_size_)},
                          q_, k_, v_, S);
}

template <typename T>
const T* Decoder<T>::run(const int32_t* tokens, int S, bool recurrent) {
  const ModelSpec& s = spec_;
  const int64_t N = int64_t(B_) * S;
  const int C = s.C, Hf = s.Hf;
  if (S <= 0 || S > S_max_) fail("decoder: segment of {} tokens; allowed 1..{} (max_segment)", S, S_max_);
  for (int64_t i = 0; i < N; ++i)
    if (tokens[i] < 0 || tokens[i] >= s.V)
      fail("token id {} at index {} is outside the vocabulary [0, {})", tokens[i], i, s.V);
  if (!kv_.empty() && position_ + S > max_positions_)
    fail("softmax decoder: position {} + {} tokens exceeds its max_positions {}; raise max_positions", position_, S,
         max_positions_);
  if (s.rope && !rope_.covers(position_, S)) rope_.rebase(position_);  // RFA only: softmax's table covers all
  if (recurrent) {
    step_layers(tokens);
  } else {
    embedding_forward(x_, tokens, model_.w.tok_embedding, N, C);
    for (int l = 0; l < s.L; ++l) {
      const BlockWeights<T>& w = model_.w.layers[static_cast<size_t>(l)];
      rmsnorm_forward(n_, rstd_, x_, w.attn_norm, N, C, s.model.norm_eps);
      linear_forward(q_, n_, w.wq, N, C, C);
      linear_forward(k_, n_, w.wk, N, C, C);
      linear_forward(v_, n_, w.wv, N, C, C);
      if (s.rope) {
        rope_forward(q_, q_, rope_, B_, S, s.H, s.Dh, position_);
        rope_forward(k_, k_, rope_, B_, S, s.H, s.Dh, position_);
      }
      attention(l, S, false);
      // x += att · Woᵀ
      gemm<T>(false, true, N, C, C, T(1), att_, C, w.wo, C, T(1), x_, C);
      rmsnorm_forward(n_, rstd_, x_, w.ffn_norm, N, C, s.model.norm_eps);
      linear_forward(gate_up_, n_, w.w13, N, C, 2 * Hf);
      swiglu_forward(act_, gate_up_, N, Hf);
      // x += act · W2 (W2 is stored (Hf, C), input-major)
      gemm<T>(false, false, N, C, Hf, T(1), act_, Hf, w.w2, C, T(1), x_, C);
    }
    rmsnorm_forward(n_, rstd_, x_, model_.w.final_norm, N, C, s.model.norm_eps);
    linear_forward(logits_, n_, model_.w.lm_head, N, C, s.V);
  }
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

// The same block as the prefill, one token per row, with the decode row kernels
// (serial at small sizes: no thread fork, no BLAS call per matrix-vector product).
template <typename T>
void Decoder<T>::step_layers(const int32_t* tokens) {
  const ModelSpec& s = spec_;
  const int B = B_, C = s.C, Hf = s.Hf;
  for (int b = 0; b < B; ++b)
    std::memcpy(x_ + int64_t(b) * C, model_.w.tok_embedding + int64_t(tokens[b]) * C, sizeof(T) * C);
  for (int l = 0; l < s.L; ++l) {
    const BlockWeights<T>& w = model_.w.layers[static_cast<size_t>(l)];
    rmsnorm_rows(n_, x_, w.attn_norm, B, C, s.model.norm_eps);
    matvec_forward(q_, n_, w.wq, B, C, C, false);
    matvec_forward(k_, n_, w.wk, B, C, C, false);
    matvec_forward(v_, n_, w.wv, B, C, C, false);
    if (s.rope) {
      rope_rows(q_, rope_, B, s.H, s.Dh, position_);
      rope_rows(k_, rope_, B, s.H, s.Dh, position_);
    }
    attention(l, 1, true);
    matvec_forward(x_, att_, w.wo, B, C, C, true);  // x += att · Woᵀ
    rmsnorm_rows(n_, x_, w.ffn_norm, B, C, s.model.norm_eps);
    matvec_forward(gate_up_, n_, w.w13, B, C, 2 * Hf, false);
    swiglu_rows(act_, gate_up_, B, Hf);
    // x += act · W2 (W2 is stored (Hf, C), input-major)
    gemm_decode<T>(false, false, B, C, Hf, T(1), act_, Hf, w.w2, C, T(1), x_, C);
  }
  rmsnorm_rows(n_, x_, model_.w.final_norm, B, C, s.model.norm_eps);
  matvec_forward(logits_, n_, model_.w.lm_head, B, C, s.V, false);
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
