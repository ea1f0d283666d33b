#pragma once
// One pre-norm transformer block (LLaMA recipe):
//   n = RMSNorm(x);  x_mid = x + Wo · Attn(Wq n, Wk n, Wv n)
//   m = RMSNorm(x_mid);  x_out = x_mid + W2 · (silu(W1 m) * (W3 m))
// The attention (attention/attention_core.h) applies RoPE to q and k itself.
// Written once: training runs it with saved activations and a backward; the
// decoder's prefill runs the same forward continuing an attention state
// (ctx.state), saving nothing. The decoder's one-token step mirrors it.
#include "attention/attention_core.h"
#include "layers/grad_write.h"
#include "model/activations.h"
#include "model/mixed_product.h"
#include "model/model_params.h"
#include "model/model_spec.h"

namespace rfa {

// One row's piece of a prefill of several rows at once (Decoder::prefill_pieces): rows
// [offset, offset + S) of the block buffers continue state row `state_row` at position `pos`.
struct PrefillPiece {
  int state_row = 0;
  int64_t pos = 0;
  int64_t offset = 0;
  int S = 0;
};

template <typename T>
struct BlockContext {
  const ModelSpec* spec = nullptr;
  const AttentionCore* attention = nullptr;
  const T* random = nullptr;        // (H, D, Dh) this layer's random matrices (RFA kinds)
  Workspace<T> attn_scratch;        // attention scratch (Activations::grad.attn_scratch, or the decoder's)
  int B = 0, T_len = 0;
  // (B, T, C) or null. Set: a.resid_in still lacks this residual term (the previous
  // block's x_mid); the first norm pass adds it in place before normalising.
  const T* resid_pending = nullptr;
  // Decoder prefill: the attention continues from rows [state_row0, state_row0 + B) of
  // this state, row b at positions row_pos0[b] .. row_pos0[b]+T-1 (null: pos0 for every
  // row); a.attn_saved may be null (no backward follows).
  AttentionState<T>* state = nullptr;
  int state_row0 = 0;
  const int64_t* row_pos0 = nullptr;
  int64_t pos0 = 0;
  // Decoder prefill of several rows' pieces (with state; B 1, T_len their total): the row-wise
  // parts run over all the rows, the attention piece by piece, each as the one-row prefill of
  // its S rows alone (the call prefill_row makes). Null: the (B, T) rectangle above.
  const PrefillPiece* pieces = nullptr;
  int n_pieces = 0;
  // Stateful training: this layer's entering state and where its final state goes
  // (AttentionCall::state_in / state_out, attention_carry_size elements each), or null.
  const T* carry_in = nullptr;
  T* carry_out = nullptr;
  // Document boundaries (AttentionCall::segment_start): (B, T), nonzero at a document's first
  // token, where attention restarts; null = none.
  const uint8_t* segment_start = nullptr;
  // block_backward: how the weight matrices' gradients are written (gemm beta 0
  // overwrites); the rest are added into (model_backward zeroes them first).
  GradWrite write = GradWrite::accumulate;
  // bf16 products (docs/bf16.md), float only: this block's weight copies, its
  // activations' copies, and the scratch a gradient is copied into before its
  // products, (B, T, max(2Hf, C)). All null: every product in T.
  const BlockWeightsBf16* wh = nullptr;
  BlockActsBf16* ah = nullptr;
  // Decoder prefill (forward only, float products): the weight matrices packed for step_gemm
  // (kernels/step_gemm.h), whose products are a row's alone whatever the rows beside it, and at a
  // prompt chunk's few rows faster than sgemm. Null: mat_product.
  const StepLayerWeights<T>* packed = nullptr;
  uint16_t* dout_bf16 = nullptr;
};

// Reads a.resid_in (completing it with ctx.resid_pending), fills the rest of `a`,
// and writes x_out - x_mid = W2 · act into resid_out (B, T, C): the caller's next
// norm pass adds a.resid_mid (residual_rmsnorm_forward), one pass over the
// stream and one parallel region less per block than a separate add. resid_out
// may be a.resid_in (read for the last time before the final product).
template <typename T>
void block_forward(const BlockContext<T>& ctx, const BlockWeights<T>& w, BlockActs<T>& a, T* resid_out);

// On entry g.dresid holds d x_out; on exit it holds d x (the block input).
// Writes the weight matrices' gradients in dw as ctx.write says, adds into the rest.
template <typename T>
void block_backward(const BlockContext<T>& ctx, const BlockWeights<T>& w, const BlockWeights<T>& dw,
                    BlockActs<T>& a, GradScratch<T>& g);

}  // namespace rfa
