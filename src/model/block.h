#pragma once
// One pre-norm transformer block (LLaMA recipe):
//   n = RMSNorm(x);  x_mid = x + Wo · Attn(Wq n, Wk n, Wv n)
//   m = RMSNorm(x_mid);  x_out = x_mid + W2 · (silu(W1 m) * (W3 m))
// with rope applied to q and k when spec.rope.
#include "layers/rope.h"
#include "model/activations.h"
#include "model/model_params.h"
#include "model/model_spec.h"

namespace rfa {

template <typename T>
struct BlockContext {
  const ModelSpec* spec = nullptr;
  const RopeTable* rope = nullptr;  // used when spec->rope
  const T* random = nullptr;        // (H, D, Dh) this layer's random matrices (RFA kinds)
  T* attn_scratch = nullptr;        // attention workspace (Activations::grad.attn_scratch)
  int64_t attn_scratch_size = 0;
  int B = 0, T_len = 0;
};

// Reads a.resid_in, fills the rest of `a`, writes x_out into resid_out (B, T, C).
template <typename T>
void block_forward(const BlockContext<T>& ctx, const BlockWeights<T>& w, BlockActs<T>& a, T* resid_out);

// On entry g.dresid holds d x_out; on exit it holds d x (the block input).
// Adds into the layer's parameter gradients dw.
template <typename T>
void block_backward(const BlockContext<T>& ctx, const BlockWeights<T>& w, const BlockWeights<T>& dw,
                    BlockActs<T>& a, GradScratch<T>& g);

}  // namespace rfa
