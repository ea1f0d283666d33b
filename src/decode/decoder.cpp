// Decoder (decoder.h): construction, prefill and the batched step; its rows (reset, save,
// restore, what the states hold) are in decoder_rows.cpp.
#include "decode/decoder.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/parallel.h"
#include "decode/decode_kernels.h"
#include "kernels/bf16.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"
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
    step_weights_ = StepWeights<T>(s, model_.w, cores_, bf16 ? StepPack::gates : StepPack::all);
    // A row split reads every weight once per thread: worth it where they stay in cache, and from
    // more rows the more there are to read. Measured (Zen 5, 2 threads, ms a step, columns -> rows,
    // native / x86-64-v3): 4x128 (3.4 MB of packed weights) 8 rows 0.19 -> 0.15 / 0.24 -> 0.18, 64
    // rows 0.77-0.85 -> 0.61-0.74 / 1.09-1.18 -> 0.97-1.03, 4 rows 0.11 -> 0.12; 8x192 (14 MB) 8 and
    // 16 rows no faster native and slower on AVX2 (0.70-0.72 -> 0.71-0.98), 64 rows 2.83-3.28 ->
    // 2.41-3.17 / 4.10-4.45 -> 3.95-4.23; 6x256 (20 MB) 64 rows 2.91-3.43 -> 2.92-3.25, 8 rows 0.58-0.65
    // -> 0.68-0.75; 6x384 (43 MB) 64 rows 5.78-6.05 -> 6.04-6.48.
    const int64_t weight_bytes = step_weights_.elements() * int64_t(sizeof(T));
    if (!bf16)
      step_row_split_ = weight_bytes <= (int64_t(4) << 20) ? 8 : weight_bytes <= (int64_t(16) << 20) ? 32 : 0;
    if constexpr (std::is_same_v<T, float>)
      if (bf16) pack_step_weights_bf16();
  }
  a.attn_saved = nullptr;  // prefill: no backward follows
  segment_tokens_.assign(static_cast<size_t>(P_) * S_max_, 0);
}

// Packs each weight matrix's bf16 copy for the step's B-row products: the plain
// copy would be reformatted on every product (gemm_bf16.h).
template <typename T>
void Decoder<T>::pack_step_weights_bf16() {
  if constexpr (std::is_same_v<T, float>) {
    const ModelSpec& s = spec_;
    const int64_t C = s.C, Hf = s.Hf, V = s.V;
    struct Job {
      PackedBf16* slot;
      const uint16_t* weight;
      bool trans;  // weight stored (N, K): the product reads its transpose
      int64_t N, K;
      bool accumulate;
      int parts = 1;
      size_t first = 0;  // its first part's index in step_parts_ and offsets
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
    // A part per physical core for a product that takes tens of µs on one thread, each part at least
    // 64 columns wide: 4M multiply-adds (64 rows of 384 x 128, 32 of 384 x 384), or one row streaming
    // 1.5 MB of weights (2048 x 384). Measured on two Zen 5 cores, one thread against two parts: 64 x
    // 704 x 128 29 -> 22 µs, 32 x 384 x 384 26 -> 21, 1 x 2048 x 384 24 -> 17; smaller ones lose to
    // the fork and the second call (8 x 384 x 384 8.5 -> 11.7, 1 x 768 x 384 8.0 -> 8.5). By the
    // cores, not the pool's threads: oneDNN's sums depend on a part's width in their last bits, and
    // the parts are the same whatever `--threads` says (each thread runs its share of them), so a step
    // gives the same bits on one thread as on several.
    constexpr int64_t kSplitMacs = int64_t(1) << 22, kSplitWeightBytes = int64_t(3) << 19;
    const int cores = std::max(1, physical_core_count());
    std::vector<int64_t> offsets;
    int64_t bytes = 0;
    for (Job& j : jobs) {
      const bool split = int64_t(B_) * j.N * j.K >= kSplitMacs || j.N * j.K * 2 >= kSplitWeightBytes;
      j.parts = split ? static_cast<int>(std::clamp<int64_t>(j.N / 64, 1, cores)) : 1;
      j.first = offsets.size();
      for (int p = 0; p < j.parts; ++p) {
        offsets.push_back(bytes);
        bytes += arena_round<uint8_t>(gemm_bf16_packed_bytes(j.trans, B_, j.N, j.K, j.accumulate, p, j.parts));
      }
    }
    step_packed_ = Arena<uint8_t>(bytes);
    step_parts_.resize(offsets.size());
    for (size_t i = 0; i < offsets.size(); ++i) step_parts_[i] = step_packed_.data() + offsets[i];
    for (Job& j : jobs) {
      *j.slot = PackedBf16{step_parts_.data() + j.first, j.parts};
      for (int p = 0; p < j.parts; ++p)
        gemm_bf16_pack(j.trans, B_, j.N, j.K, j.accumulate, j.weight, j.trans ? j.K : j.N, p, j.parts,
                       step_packed_.data() + offsets[j.first + size_t(p)]);
    }
    // A step of fewer rows (a server's slots not all busy) runs its products for the next power of two
    // at or above its count, over the same packing, where oneDNN gives those rows the bits they get among
    // B (gemm_bf16_packed_rows_prepare, each shape checked on its first matrix): one row does not cost B.
    step_rows_bf16_.clear();
    for (int m = 1; m < B_; m *= 2) {
      bool usable = true;
      for (size_t i = 0; usable && i < jobs.size(); ++i) {
        const Job& j = jobs[i];
        const bool seen = std::any_of(jobs.begin(), jobs.begin() + static_cast<std::ptrdiff_t>(i), [&](const Job& k) {
          return k.trans == j.trans && k.N == j.N && k.K == j.K && k.accumulate == j.accumulate && k.parts == j.parts;
        });
        if (!seen)
          usable = gemm_bf16_packed_rows_prepare(j.trans, m, j.N, j.K, j.accumulate, j.slot->part, j.parts, B_);
      }
      if (usable) step_rows_bf16_.push_back(m);
    }
    step_rows_bf16_.push_back(B_);
  }
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
const T* Decoder<T>::step(const int32_t* tokens) {
  check_tokens(tokens, B_);
  for (int b = 0; b < B_; ++b) check_room(b, 1);
  step_layers(tokens, B_, nullptr, pos_.data(), last_);
  for (int b = 0; b < B_; ++b) {
    pos_[static_cast<size_t>(b)] += 1;
    has_logits_[static_cast<size_t>(b)] = 1;
  }
  any_logits_ = true;
  return last_;
}

template <typename T>
const T* Decoder<T>::step_rows(const int* rows, int n, const int32_t* tokens) {
  if (n < 1 || n > B_) fail("decoder: a step of {} rows; allowed 1..{} (the batch)", n, B_);
  check_tokens(tokens, n);
  std::fill(step_rows_.begin(), step_rows_.end(), 0);  // marks: each row at most once
  for (int i = 0; i < n; ++i) {
    const int b = rows[i];
    if (b < 0 || b >= B_) fail("decoder: row {} outside the batch of {}", b, B_);
    if (step_rows_[static_cast<size_t>(b)]++) fail("decoder: row {} listed twice in one step", b);
    check_room(b, 1);
    step_pos_[static_cast<size_t>(i)] = position(b);
  }
  step_layers(tokens, n, rows, step_pos_.data(), logits_);
  for (int i = 0; i < n; ++i) {
    const int b = rows[i];
    std::memcpy(last_ + int64_t(b) * spec_.V, logits_ + int64_t(i) * spec_.V, sizeof(T) * spec_.V);
    pos_[static_cast<size_t>(b)] += 1;
    has_logits_[static_cast<size_t>(b)] = 1;
  }
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
  embedding_forward(a.resid_in, tokens, model_.w.tok_embedding, N, s.C);
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

// The mirror of block_forward (model/block.cpp) for one token per row, with the
// decode row kernels (serial at small sizes: no thread fork, no BLAS call per
// matrix-vector product) and the attention's one-token step. Same math; the
// decoder tests pin steps to the prefill. n rows (state rows `rows`, null = 0..n-1)
// at positions pos; logits (n, V). A bf16 step multiplies the first of step_rows_bf16_ at or
// above n (its products are packed for B): rows past n are padding, computed and dropped.
template <typename T>
void Decoder<T>::step_layers(const int32_t* tokens, int n, const int* rows, const int64_t* pos, T* logits) {
  RFA_ASSERT(steps_, "decoder: a step on a decoder built with steps = false");
  const ModelSpec& s = spec_;
  const bool bf16 = !step_bf16_.empty();
  const int M = bf16 ? *std::lower_bound(step_rows_bf16_.begin(), step_rows_bf16_.end(), n) : n, C = s.C, Hf = s.Hf;
  BlockActs<T>& a = acts_;
  T* x = a.resid_in;  // (M, C) the whole residual stream here
  T* nrm = a.attn_norm;
  // Rows [r0, r1) of out (M, OC) (+)= in (M, IC) · op(W): W (OC, IC) read transposed, or W2 (IC, OC)
  // as stored. bf16: `in` converted, against the packed copy of W (only ever all rows, r0 = 0).
  // W: the packed copy (step_weights_), or null for bf16's packed_bf16 (trans: W stored (OC, IC)).
  auto product = [&](int r0, int r1, GemmThreads threads, T* out, const T* in, const T* W,
                     const PackedBf16& packed_bf16, bool trans, int IC, int OC, bool accumulate) {
    if constexpr (std::is_same_v<T, float>) {
      if (packed_bf16.part) {
        uint16_t* in_bf16 = IC == C ? acts_bf16_.attn_norm : acts_bf16_.ffn_act;  // (M, IC) scratch
        bf16_from_float_serial(in_bf16, in, int64_t(M) * IC);
        gemm_bf16_packed(trans, M, OC, IC, accumulate, in_bf16, packed_bf16.part, packed_bf16.parts, out, B_);
        return;
      }
    }
    // Batch-invariant (kernels/step_gemm.h): a row's logits do not depend on the rows beside it, nor
    // on which thread runs it. It forks to the pool when a product is large enough (GemmThreads::pool).
    step_gemm<T>(r1 - r0, OC, IC, in + int64_t(r0) * IC, W, out + int64_t(r0) * OC, accumulate, threads);
  };
  // From step_row_split_ rows (fp32, weights that stay in cache) each thread takes a share of the rows
  // through every row-wise part between two attention steps (norms, products, SwiGLU) in one parallel
  // region: a step forks 2 L + 1 times instead of once per product and kernel (about 7 L), and each
  // fork ends at a barrier that waits for the slowest thread (in `rfa serve` the HTTP threads share the
  // cores). The attention steps split (row, head) tasks over the pool as before. The same bits either
  // way (the products are batch-invariant, the rest is per row).
  const bool split = step_row_split_ > 0 && M >= step_row_split_ && thread_count() > 1 && !in_parallel_region();
  auto rowwise = [&](auto&& body) {  // body(r0, r1, threads)
    if (!split) return body(0, M, GemmThreads::pool);
    parallel_region_serial_calls([&](int t, int threads) {
      body(static_cast<int>(partition_begin(M, t, threads)), static_cast<int>(partition_begin(M, t + 1, threads)),
           GemmThreads::one);
    });
  };
  auto stepped = [&](int l) -> StepWeightsBf16 {
    return bf16 ? step_bf16_[static_cast<size_t>(l)] : StepWeightsBf16{};
  };
  // rmsnorm and q, k, v of layer l for rows [r0, r1).
  auto attention_inputs = [&](int l, int r0, int r1, GemmThreads threads) {
    const BlockWeights<T>& w = model_.w.layers[static_cast<size_t>(l)];
    const StepLayerWeights<T>& f = step_weights_.layer(l);
    const StepWeightsBf16 p = stepped(l);
    rmsnorm_rows(nrm + int64_t(r0) * C, x + int64_t(r0) * C, w.attn_norm, r1 - r0, C, s.model.norm_eps);
    if (p.wq.part) {  // bf16 (all rows): the input converted once, q, k and v in one pass of the pool
      if constexpr (std::is_same_v<T, float>) {
        RFA_ASSERT(p.wk.parts == p.wq.parts && p.wv.parts == p.wq.parts, "q, k and v packed in different parts");
        bf16_from_float_serial(acts_bf16_.attn_norm, nrm, int64_t(M) * C);
        const Bf16Product qkv[] = {{p.wq.part, a.q}, {p.wk.part, a.k}, {p.wv.part, a.v}};
        gemm_bf16_packed_group(true, M, C, C, false, acts_bf16_.attn_norm, qkv, p.wq.parts, B_);
      }
    } else {  // q, k and v in one pass of the pool (one row's three fork together)
      const int64_t at = int64_t(r0) * C;
      const StepProduct<T> qkv[] = {{f.wq, a.q + at}, {f.wk, a.k + at}, {f.wv, a.v + at}};
      step_gemm_group<T>(r1 - r0, C, C, nrm + at, qkv, false, threads);
    }
  };
  // Layer l's output projection and feed-forward for rows [r0, r1).
  auto attention_output_and_ffn = [&](int l, int r0, int r1, GemmThreads threads) {
    const BlockWeights<T>& w = model_.w.layers[static_cast<size_t>(l)];
    const StepLayerWeights<T>& f = step_weights_.layer(l);
    const StepWeightsBf16 p = stepped(l);
    product(r0, r1, threads, x, a.attn_out, f.wo, p.wo, true, C, C, true);  // x += att · Woᵀ
    rmsnorm_rows(nrm + int64_t(r0) * C, x + int64_t(r0) * C, w.ffn_norm, r1 - r0, C, s.model.norm_eps);
    product(r0, r1, threads, a.ffn_gate_up, nrm, f.w13, p.w13, true, C, 2 * Hf, false);
    swiglu_rows(a.ffn_act + int64_t(r0) * Hf, a.ffn_gate_up + int64_t(r0) * 2 * Hf, r1 - r0, Hf);
    product(r0, r1, threads, x, a.ffn_act, f.w2, p.w2, false, Hf, C, true);  // x += act · W2 (W2 stored (Hf, C))
  };
  rowwise([&](int r0, int r1, GemmThreads threads) {
    for (int i = r0; i < r1; ++i)  // padding rows (bf16) read token 0
      std::memcpy(x + int64_t(i) * C, model_.w.tok_embedding + int64_t(i < n ? tokens[i] : 0) * C, sizeof(T) * C);
    attention_inputs(0, r0, r1, threads);
  });
  const AttentionRows attn_rows{n, rows, pos};
  for (int l = 0; l < s.L; ++l) {
    attention_step(cores_[static_cast<size_t>(l)], model_.w.layers[static_cast<size_t>(l)].attn,
                   states_[static_cast<size_t>(l)], a.attn_out,
                   AttentionInputs<T>{a.q, a.k, a.v, nrm, step_weights_.layer(l).gate}, attn_rows);
    rowwise([&](int r0, int r1, GemmThreads threads) {
      attention_output_and_ffn(l, r0, r1, threads);
      if (l + 1 < s.L) {
        attention_inputs(l + 1, r0, r1, threads);
      } else {
        rmsnorm_rows(nrm + int64_t(r0) * C, x + int64_t(r0) * C, model_.w.final_norm, r1 - r0, C, s.model.norm_eps);
        product(r0, r1, threads, logits, nrm, step_weights_.lm_head(), step_lm_head_bf16_, true, C, s.V, false);
      }
    });
  }
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
