#pragma once
// Autoregressive decoding over the whole model, B independent rows (sequences). A
// prompt is prefilled segment by segment through the training block (model/block.h)
// with the attention continuing from each layer's state (no activations saved); then
// every new token is one step per layer:
//   RFA kinds: state S (H, F, Dh+1) per layer and row, O(F·Dh) work and memory per
//              head and token whatever the position; no length limit.
//   softmax:   a KV cache per layer and row (H, max_positions, Dh), O(t) per token;
//              with a window W, a ring cache (H, W, Dh) of the last W positions, O(W)
//              per token (softmax_kv_cache.h).
// Every row has its own position and its own state: a row can be reset, prefilled,
// saved and restored without touching the others, and a step moves any subset of the
// rows (the others stay idle) at their own positions, in one batched product per
// weight matrix (docs/decoding.md, "Rows").
// The attention (attention/attention_core.h) owns the states, its random matrices (the
// model's FIXED evaluation set, copied at construction: build the decoder after loading
// the weights) and its RoPE tables. The prefill reads the other weights live from the
// model; the step reads copies packed at construction (decode/step_weights.h; bf16: the
// bf16 copies packed for oneDNN), so a decoder that steps must be built after the last
// change to the weights. An fp32 decoder that steps reads only those copies, prefill too; as the
// model's last reader it may give the model's pages under them back (release_model_matrices).
// Everything is allocated by the constructor; no other member function allocates.
#include <cstdint>
#include <span>
#include <vector>

#include "attention/attention_core.h"
#include "decode/step_weights.h"
#include "kernels/step_gemm.h"
#include "model/activations.h"
#include "model/block.h"
#include "model/model.h"
#include "tensor/arena.h"

namespace rfa {

struct DecoderOptions {
  int batch = 1;               // B rows (sequences), each at its own position
  int max_segment = 256;       // most tokens per prefill() call (longer prompts go in pieces)
  int64_t max_positions = 0;   // positions a row may reach (prompt + generated): the RoPE table and
                               // softmax's KV cache without a window; 0 for an RFA kind without RoPE (no limit)
  int window = 0;              // softmax: attend over the last `window` positions (a ring KV cache of
                               // min(window, max_positions) slots); 0 = the whole text. RFA kinds: unused
  int prefill_rows = 0;        // rows one prefill covers: 0 = all (prefill()); 1 = one at a time (prefill_row()),
                               // which keeps a large batch's prefill buffers at one row's (B, 1) step's size
  Precision precision = Precision::fp32;  // bf16: the matrix products read the model's bf16 weight copies
                                          // (the model must be built with them); the rest stays float
  bool steps = true;           // step()/step_rows() allowed: packs the step's weights (decode/step_weights.h,
                               // about the model's size again); false for a decoder that only prefills
  bool release_model_matrices = false;  // with steps: this decoder is the model's last reader (generate, serve,
                                        // chat). fp32: its products, prefill's too, read only the packed
                                        // copies, so each matrix's pages in the model's arena go back to the
                                        // kernel once packed (Model::matrices_mark_released): the weights are
                                        // held once (a tied embedding's rows then come from the LM head's
                                        // packed copy). bf16: the float masters of the matrices with bf16 copies
                                        // (all but the output gates'), after packing. The model cannot then be
                                        // read otherwise (checksum it first). Without steps: nothing released
};

template <typename T>
class Decoder {
 public:
  Decoder(Model<T>& model, const DecoderOptions& options);
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // ---- Every row --------------------------------------------------------------
  void reset();  // every row empty, at position 0, without logits

  // Runs S <= max_segment tokens per row through the parallel form, each row continuing
  // from its own state and position. tokens: (B, S). Returns the logits (B, S, V), valid
  // until the next call. Needs prefill_rows == batch.
  const T* prefill(const int32_t* tokens, int S);
  // One token per row, one recurrent step per layer. tokens: (B). Returns (B, V).
  const T* step(const int32_t* tokens);
  // The whole prompt (B, T) in segments of max_segment; returns the logits of its
  // last position (B, V) (row b at stride V).
  const T* prefill_all(const int32_t* tokens, int64_t T_len);
  // Logits (B, V) of each row's last position (row b at stride V); null before any row has some.
  const T* last_logits() const { return any_logits_ ? last_ : nullptr; }

  // ---- One row, or some -------------------------------------------------------
  void reset_row(int b);  // row b empty at position 0; the other rows untouched
  // S <= max_segment tokens of row b only (the others untouched: e.g. a prompt prefilled in
  // bounded pieces while other rows keep stepping). Returns the logits (S, V).
  const T* prefill_row(int b, const int32_t* tokens, int S);
  // One token for each of the n listed rows (distinct), at their own positions; the other
  // rows stay idle. tokens: (n). Returns the logits (n, V), row i's at i * V.
  const T* step_rows(const int* rows, int n, const int32_t* tokens);
  // Several rows' prompt pieces in one pass (rfa serve's prefill tick): distinct rows, each
  // 1..max_segment tokens, together at most prefill_rows * max_segment. The products run over
  // all their rows at once, the attention piece by piece; each row ends with its last
  // position's logits (row_logits) and no other logits are computed. Everything is checked
  // before anything changes (Error). When prefill_batch_invariant(), a row's state and logits
  // are prefill_row's bit for bit, whatever pieces run beside it.
  struct RowTokens {
    int row = 0;
    const int32_t* tokens = nullptr;
    int S = 0;
  };
  void prefill_pieces(std::span<const RowTokens> pieces);
  // Throws the Error prefill_row(row, tokens, S) would throw before changing anything; else nothing.
  void check_prefill_row(int row, const int32_t* tokens, int S) const;
  // The prefill's products are the packed, batch-invariant ones (fp32 with steps; not bf16).
  bool prefill_batch_invariant() const { return step_weights_.packs_all(); }
  // bf16: the row counts a step's products may run (ascending, the last the batch); a step of n
  // rows runs the first at or above n, its rows the bits they get among the whole batch.
  std::span<const int> bf16_step_rows() const { return step_rows_bf16_; }
  // Logits (V) of row b's last position; null when the row has none (reset, never run).
  const T* row_logits(int b) const;
  // Puts back row b's last-position logits (V), e.g. from a saved generation.
  void row_logits_restore(int b, const T* logits);

  int64_t position(int b = 0) const { return pos_[static_cast<size_t>(b)]; }
  // Moves row b to position p (after restoring its states, or to truncate a softmax cache);
  // throws Error naming the reason when the state cannot (attention_state_move_refusal).
  void set_position(int b, int64_t p);

  // Bytes of one row's saved form: its position, logits and every layer's state row.
  int64_t row_bytes() const;
  void row_save(int b, uint8_t* out) const;  // row_bytes(); no allocation
  // Restores row b from row_save's bytes (of this decoder's model and options).
  void row_restore(int b, const uint8_t* in);

  // Row b's states compactly, as a state cache keeps them: every layer's part in use at the
  // row's position (a KV cache's filled slots, a recurrent state whole), no position, no logits.
  int64_t row_state_size(int64_t position) const;  // elements
  void row_state_save(int b, T* out) const;        // row_state_size(position(b)); no allocation
  // Row b at `position` from row_state_save's elements and its last logits (V); throws Error
  // naming the reason when the row cannot hold that position (a linear cache's length).
  void row_state_restore(int b, int64_t position, const T* state, const T* logits);

  int batch() const { return B_; }
  int prefill_rows() const { return P_; }
  int vocab() const { return spec_.V; }
  int max_segment() const { return S_max_; }
  const ModelSpec& spec() const { return spec_; }
  // Bytes of state in use now, every row (RFA: fixed; softmax: grows with position).
  int64_t state_bytes() const;
  // Bytes reserved for state (softmax: the whole cache).
  int64_t state_capacity_bytes() const;
  // The same plus the step's scratch the states hold: what memory_estimate_decoder counts.
  int64_t state_reserved_bytes() const;
  // Bytes of the step's packed weight copies (decode/step_weights.h).
  int64_t step_weights_bytes() const { return step_weights_.elements() * int64_t(sizeof(T)); }

  // Each layer's attention state (L), for saving/restoring a generation.
  std::vector<AttentionState<T>>& attention_states() { return states_; }
  const std::vector<AttentionState<T>>& attention_states() const { return states_; }

 private:
  void check_tokens(const int32_t* tokens, int64_t n) const;
  void check_room(int b, int S) const;  // row b may take S more positions
  // Runs S tokens of `rows` rows from state row b0 on (rows at pos_[b0..]); logits into logits_.
  void prefill_layers(const int32_t* tokens, int b0, int rows, int S);
  // The embedding, every block (ctx set up by the caller but for its per-layer fields) and the
  // final norm over N rows; the normed rows end in acts_.attn_norm.
  void prefill_blocks(const int32_t* tokens, int64_t N, BlockContext<T>& ctx);
  // logits (N, V) = nrm (N, C) · lm_headᵀ
  void prefill_logits(const T* nrm, int64_t N, T* logits);
  void step_layers(const int32_t* tokens, int n, const int* rows, const int64_t* pos, T* logits);
  void pack_step_weights_bf16();  // fills step_bf16_

  Model<T>& model_;
  ModelSpec spec_;
  int B_ = 0, S_max_ = 0, P_ = 0;  // rows, segment, rows per prefill
  bool steps_ = true;              // options.steps
  std::vector<int64_t> pos_;        // (B) each row's position
  std::vector<uint8_t> has_logits_;  // (B) the row's last_ holds its latest logits
  bool any_logits_ = false;
  int64_t position_limit_ = 0;      // the most positions the states and RoPE tables allow; 0 = none
  std::vector<AttentionState<T>> states_;  // (L)
  std::vector<AttentionCore> cores_;       // (L) RoPE tables for max_positions
  Arena<T> arena_;
  BlockActs<T> acts_;     // one segment's block buffers (max(P S, B) rows), shared by every layer
  BlockActsBf16 acts_bf16_;  // bf16 only: the products' inputs (B, S, C) / (B, S, Hf); null in fp32
  // bf16 only: the step's weight matrices packed for B-row products (gemm_bf16_packed),
  // taken from the model's bf16 copies at construction, each in column parts that run
  // side by side on the pool: `part` points at its `parts` packed blocks in step_parts_.
  struct PackedBf16 {
    const void* const* part = nullptr;
    int parts = 0;
  };
  struct StepWeightsBf16 {
    PackedBf16 wq, wk, wv, wo, w13, w2;
  };
  std::vector<StepWeightsBf16> step_bf16_;  // (L)
  PackedBf16 step_lm_head_bf16_;
  std::vector<int> step_rows_bf16_;      // the row counts a bf16 step may multiply, ascending, the last B
  // fp32 steps of at least this many rows split their row-wise work by rows, not columns (0: never):
  // from 8 rows when the packed weights are at most 4 MB, from 32 up to 16 MB (step_layers).
  int step_row_split_ = 0;
  // Where the step's fp32 products find their packed weights: from memory above 16 MB, where no
  // row split keeps them in cache (kernels/step_gemm.h WeightsFrom).
  WeightsFrom step_weights_from_ = WeightsFrom::cache;
  std::vector<const void*> step_parts_;  // every packed matrix's parts, in packing order
  Arena<uint8_t> step_packed_;
  StepWeights<T> step_weights_;  // the step's packed weights (bf16: the output gates' only; none without steps)
  // fp32, tied LM head, the model's matrices released: the embedding's rows come from the LM head's
  // packed copy (step_packed_rows), the one copy of that matrix left.
  bool embedding_packed_ = false;
  T* logits_ = nullptr;   // (P, S, V), at least (B, V)
  T* last_ = nullptr;     // (B, V) each row's last-position logits
  Workspace<T> scratch_;  // the attention's prefill scratch (RFA chunked form or softmax scores)
  std::vector<int32_t> segment_tokens_;  // (P, S) staging for prefill_all with B > 1
  std::vector<PrefillPiece> pieces_;     // (B) prefill_pieces' pieces
  std::vector<int64_t> step_pos_;        // (B) a step's rows' positions
  std::vector<int> step_rows_;           // (B) marks: a row listed in this step
};

}  // namespace rfa
