// Decoder (decoder.h): construction and prefill; the batched one-token step is in
// decoder_step.cpp, the rows (reset, save, restore, what the states hold) in decoder_rows.cpp.
#include "decode/decoder.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/parallel.h"
#include "core/step_profile.h"
#include "kernels/gemm.h"
#include "kernels/step_gemm.h"
#include "layers/embedding.h"
#include "layers/rmsnorm.h"
#include "model/block.h"

namespace rfa {

template <typename T>
Decoder<T>::Decoder(Model<T>& model, const DecoderOptions& o)
    : model_(model),
      spec_(model.spec),
      B_(o.batch),
      S_max_(o.max_segment),
      P_(o.prefill_rows ? o.prefill_rows : o.batch),
      steps_(o.steps) {
  const ModelSpec& s = spec_;
  if (B_ <= 0) fail("decoder: batch {} must be positive", B_);
  if (S_max_ <= 0) fail("decoder: max_segment {} must be positive", S_max_);
  if (P_ < 1 || P_ > B_) fail("decoder: prefill_rows {} must be in [1, {}] (0 = the batch)", o.prefill_rows, B_);
  const bool bf16 = o.precision == Precision::bf16;
  RFA_ASSERT(!bf16 || model_.precision == Precision::bf16, "a bf16 decoder needs a model built with bf16 copies");
  model_.matrices_check_kept("a decoder");  // it packs them, and a prefill without the packed copies reads them
  AttentionStateOptions so;
  so.B = B_;
  so.max_positions = o.max_positions;
  so.window = o.window;
  const std::vector<AttentionSpec>& layers = s.attn;
  for (int l = 0; l < s.L; ++l) states_.emplace_back(layers[size_t(l)], model_.random_fixed() + model_.random_offset(l), so);
  for (const AttentionSpec& a : layers)
    if (a.rope && o.max_positions <= 0)
      fail("decoder: a model with RoPE positions needs max_positions (prompt + tokens to generate) for its rotation "
           "table, got {}",
           o.max_positions);
  cores_ = attention_cores_make(layers, o.max_positions);
  // The most positions every layer allows: its RoPE table, its cache.
  auto limit_by = [&](int64_t limit) {
    if (limit > 0) position_limit_ = position_limit_ > 0 ? std::min(position_limit_, limit) : limit;
  };
  for (size_t l = 0; l < layers.size(); ++l) {
    limit_by(cores_[l].position_limit());
    limit_by(attention_state_position_limit(layers[l], so));
  }
  pos_.assign(static_cast<size_t>(B_), 0);
  has_logits_.assign(static_cast<size_t>(B_), 0);
  step_pos_.assign(static_cast<size_t>(B_), 0);
  step_rows_.assign(static_cast<size_t>(B_), 0);
  pieces_.assign(static_cast<size_t>(B_), PrefillPiece{});

  int64_t scratch = 0;  // one prefill at a time: the largest layer's
  for (const AttentionSpec& a : layers)
    scratch = std::max(scratch, attention_prefill_scratch_size(a, so, P_, S_max_, thread_count()));
  scratch_.size = static_cast<size_t>(scratch);
  // Rows of the block buffers: a prefill's (P, S), or a step's B.
  const int64_t N = std::max(int64_t(P_) * S_max_, int64_t(B_)), C = s.C, Hf = s.Hf, V = s.V;
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
  if (steps_) {
    // fp32: a matrix's huge pages go back as soon as it is packed, so that the peak is not both
    // copies (StepWeights); a tied embedding's too, whose rows are then read from the LM head's
    // packed copy. bf16 (below): the embedding stays (its LM head is packed for oneDNN).
    const bool release = o.release_model_matrices;
    if (release) model_.matrices_mark_released();
    auto give_back = [this](const T* matrix, int64_t count, size_t granule = 0) {
      model_.matrix_pages_release(matrix, count, granule);
    };
    step_weights_ = StepWeights<T>(s, model_.w, cores_, bf16 ? StepPack::gates : StepPack::all,
                                   release && !bf16 ? typename StepWeights<T>::Release(give_back) : nullptr);
    embedding_packed_ = release && !bf16 && s.model.tie_embeddings;
    // A row split reads every weight once per thread: worth it where they stay in cache, and from
    // more rows the more there are to read. Measured (Zen 5, 2 threads, ms a step, columns -> rows,
    // native / x86-64-v3): 4x128 (3.4 MB of packed weights) 8 rows 0.19 -> 0.15 / 0.24 -> 0.18, 64
    // rows 0.77-0.85 -> 0.61-0.74 / 1.09-1.18 -> 0.97-1.03, 4 rows 0.11 -> 0.12; 8x192 (14 MB) 8 and
    // 16 rows no faster native and slower on AVX2 (0.70-0.72 -> 0.71-0.98), 64 rows 2.83-3.28 ->
    // 2.41-3.17 / 4.10-4.45 -> 3.95-4.23; 6x256 (20 MB) 64 rows 2.91-3.43 -> 2.92-3.25, 8 rows 0.58-0.65
    // -> 0.68-0.75; 6x384 (43 MB) 64 rows 5.78-6.05 -> 6.04-6.48.
    const int64_t weight_bytes = step_weights_.elements() * int64_t(sizeof(T));
    if (!bf16) {
      step_row_split_ = weight_bytes <= (int64_t(4) << 20) ? 8 : weight_bytes <= (int64_t(16) << 20) ? 32 : 0;
      step_weights_from_ = step_row_split_ > 0 ? WeightsFrom::cache : WeightsFrom::memory;
    }
    if constexpr (std::is_same_v<T, float>)
      if (bf16) {
        pack_step_weights_bf16();
        // Every product but the output gate's (prefill: a float gemm) reads the bf16 copies: their
        // float masters go back, half of what the model held.
        if (release) {
          for (const BlockWeights<T>& w : model_.w.layers)
            for (auto [matrix, count] : {std::pair{w.wq, C * C}, std::pair{w.wk, C * C}, std::pair{w.wv, C * C},
                                         std::pair{w.wo, C * C}, std::pair{w.w13, 2 * Hf * C}, std::pair{w.w2, Hf * C}})
              give_back(matrix, count);
          if (!s.model.tie_embeddings) give_back(model_.w.lm_head, V * C);
        }
      }
  }
  a.attn_saved = nullptr;  // prefill: no backward follows
  segment_tokens_.assign(static_cast<size_t>(P_) * S_max_, 0);
}

template <typename T>
void Decoder<T>::check_tokens(const int32_t* tokens, int64_t n) const {
  for (int64_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= spec_.V)
      fail("token id {} at index {} is outside the vocabulary [0, {})", tokens[i], i, spec_.V);
}

template <typename T>
void Decoder<T>::check_room(int b, int S) const {
  if (position_limit_ > 0 && position(b) + S > position_limit_)
    fail("decoder: position {} + {} tokens exceeds its max_positions {}; raise max_positions", position(b), S,
         position_limit_);
}

template <typename T>
const T* Decoder<T>::prefill(const int32_t* tokens, int S) {
  if (P_ != B_) fail("decoder: built to prefill {} of its {} rows at a time; prefill each with prefill_row", P_, B_);
  if (S <= 0 || S > S_max_) fail("decoder: segment of {} tokens; allowed 1..{} (max_segment)", S, S_max_);
  check_tokens(tokens, int64_t(B_) * S);
  for (int b = 0; b < B_; ++b) check_room(b, S);
  prefill_layers(tokens, 0, B_, S);
  for (int b = 0; b < B_; ++b) {
    std::memcpy(last_ + int64_t(b) * spec_.V, logits_ + (int64_t(b) * S + S - 1) * spec_.V, sizeof(T) * spec_.V);
    pos_[static_cast<size_t>(b)] += S;
    has_logits_[static_cast<size_t>(b)] = 1;
  }
  any_logits_ = true;
  return logits_;
}

template <typename T>
void Decoder<T>::check_prefill_row(int b, const int32_t* tokens, int S) const {
  if (b < 0 || b >= B_) fail("decoder: row {} outside the batch of {}", b, B_);
  if (S <= 0 || S > S_max_) fail("decoder: segment of {} tokens; allowed 1..{} (max_segment)", S, S_max_);
  check_tokens(tokens, S);
  check_room(b, S);
}

template <typename T>
const T* Decoder<T>::prefill_row(int b, const int32_t* tokens, int S) {
  check_prefill_row(b, tokens, S);
  prefill_layers(tokens, b, 1, S);
  std::memcpy(last_ + int64_t(b) * spec_.V, logits_ + int64_t(S - 1) * spec_.V, sizeof(T) * spec_.V);
  pos_[static_cast<size_t>(b)] += S;
  has_logits_[static_cast<size_t>(b)] = 1;
  any_logits_ = true;
  return logits_;
}

template <typename T>
void Decoder<T>::prefill_pieces(std::span<const RowTokens> pieces) {
  const int n = static_cast<int>(pieces.size());
  if (n < 1 || n > B_) fail("decoder: a prefill of {} rows' pieces; allowed 1..{} (the batch)", n, B_);
  const int64_t capacity = int64_t(P_) * S_max_;
  int64_t N = 0;
  std::fill(step_rows_.begin(), step_rows_.end(), 0);  // marks: each row at most once
  for (const RowTokens& p : pieces) {
    check_prefill_row(p.row, p.tokens, p.S);
    if (step_rows_[static_cast<size_t>(p.row)]++) fail("decoder: row {} listed twice in one prefill", p.row);
    N += p.S;
  }
  if (N > capacity)
    fail("decoder: pieces of {} tokens together; at most {} (prefill_rows {} x max_segment {})", N, capacity, P_,
         S_max_);
  // The pieces one after another in the (1, N) buffers.
  int64_t offset = 0;
  for (int i = 0; i < n; ++i) {
    const RowTokens& p = pieces[static_cast<size_t>(i)];
    pieces_[static_cast<size_t>(i)] = PrefillPiece{p.row, position(p.row), offset, p.S};
    std::memcpy(segment_tokens_.data() + offset, p.tokens, sizeof(int32_t) * static_cast<size_t>(p.S));
    offset += p.S;
  }
  BlockContext<T> ctx;
  ctx.B = 1;
  ctx.T_len = static_cast<int>(N);
  ctx.pieces = pieces_.data();
  ctx.n_pieces = n;
  prefill_blocks(segment_tokens_.data(), N, ctx);
  // Only each piece's last row goes through the LM head: its normed row gathered into q's buffer.
  const int64_t C = spec_.C, V = spec_.V;
  BlockActs<T>& a = acts_;
  for (int i = 0; i < n; ++i) {
    const PrefillPiece& p = pieces_[static_cast<size_t>(i)];
    std::memcpy(a.q + i * C, a.attn_norm + (p.offset + p.S - 1) * C, sizeof(T) * C);
  }
  prefill_logits(a.q, n, logits_);
  for (int i = 0; i < n; ++i) {
    const PrefillPiece& p = pieces_[static_cast<size_t>(i)];
    std::memcpy(last_ + int64_t(p.state_row) * V, logits_ + i * V, sizeof(T) * V);
    pos_[static_cast<size_t>(p.state_row)] += p.S;
    has_logits_[static_cast<size_t>(p.state_row)] = 1;
  }
  any_logits_ = true;
}

// Rows [b0, b0 + rows) of the states, S tokens each, as one (rows, S) rectangle.
template <typename T>
void Decoder<T>::prefill_layers(const int32_t* tokens, int b0, int rows, int S) {
  BlockContext<T> ctx;
  ctx.B = rows;
  ctx.T_len = S;
  ctx.state_row0 = b0;
  ctx.row_pos0 = pos_.data() + b0;
  ctx.pos0 = position(b0);
  const int64_t N = int64_t(rows) * S;
  prefill_blocks(tokens, N, ctx);
  prefill_logits(acts_.attn_norm, N, logits_);
}

// The training block (model/block.h), every layer on the same buffers: a block's
// output (without x_mid) goes back into resid_in, and the next norm adds x_mid
// (resid_pending), as in model_forward.
template <typename T>
void Decoder<T>::prefill_blocks(const int32_t* tokens, int64_t N, BlockContext<T>& ctx) {
  const ModelSpec& s = spec_;
  BlockActs<T>& a = acts_;
  if (embedding_packed_) {
    const ProfileScope profile(ProfiledKernel::embedding, 0, sizeof(T) * 2.0 * double(N) * s.C);
    step_packed_rows<T>(step_weights_.lm_head(), s.V, s.C, tokens, N, a.resid_in);
  } else {
    embedding_forward(a.resid_in, tokens, model_.w.tok_embedding, N, s.C);
  }
  const bool prefill_packed = step_weights_.packs_all();  // fp32 with steps
  ctx.spec = &s;
  ctx.attn_scratch = scratch_;
  for (int l = 0; l < s.L; ++l) {
    ctx.attention = &cores_[static_cast<size_t>(l)];
    ctx.random = model_.random_fixed() + model_.random_offset(l);
    ctx.state = &states_[static_cast<size_t>(l)];
    ctx.resid_pending = l > 0 ? a.resid_mid : nullptr;
    if (acts_bf16_.attn_norm) {
      ctx.wh = &model_.wh.layers[static_cast<size_t>(l)];
      ctx.ah = &acts_bf16_;
    }
    // The packed copies (fp32 with steps): a prompt's prefill is the same bits whatever else runs.
    ctx.packed = prefill_packed ? &step_weights_.layer(l) : nullptr;
    block_forward(ctx, model_.w.layers[static_cast<size_t>(l)], a, a.resid_in);
  }
  residual_rmsnorm_forward(a.attn_norm, a.attn_rstd, a.resid_in, a.resid_mid, model_.w.final_norm, N, s.C,
                           s.model.norm_eps);
}

template <typename T>
void Decoder<T>::prefill_logits(const T* nrm, int64_t N, T* logits) {
  const ModelSpec& s = spec_;
  if (step_weights_.packs_all()) {
    step_gemm<T>(N, s.V, s.C, nrm, step_weights_.lm_head(), logits, false, GemmThreads::pool);
    return;
  }
  const bool bf16 = acts_bf16_.attn_norm != nullptr;  // nrm's bf16 copy written into the (N, C) scratch
  mat_product<T>(false, true, N, s.V, s.C, mat_operand_bf16(nrm, acts_bf16_.attn_norm, N * s.C), s.C,
                 {model_.w.lm_head, bf16 ? model_.wh.lm_head : nullptr}, s.C, T(0), logits, s.V);
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
  return last_logits();
}

template class Decoder<float>;
template class Decoder<double>;

}  // namespace rfa
