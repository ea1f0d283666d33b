#pragma once
// Activations of one forward/backward over a (B, T) batch, in one arena sized
// up front. Every intermediate is named with its layer index
// ("layers.3.ffn_gate_up") so it can be dumped and compared. The gradient
// scratch (d*) is shared across layers: the backward walks layers in reverse
// and reuses it. Nothing here allocates after construction.
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_spec.h"
#include "tensor/arena.h"

namespace rfa {

template <typename T>
struct BlockActs {
  T* resid_in = nullptr;     // (B, T, C)  block input (the residual stream)
  T* attn_norm = nullptr;    // (B, T, C)  RMSNorm(resid_in)
  T* attn_rstd = nullptr;    // (B, T)
  T* q = nullptr;            // (B, T, C)  after rope when rope is on
  T* k = nullptr;            // (B, T, C)  after rope when rope is on
  T* v = nullptr;            // (B, T, C)
  T* attn_out = nullptr;     // (B, T, C)  attention output, heads concatenated, before wo
  T* attn_saved = nullptr;   // attention core's saved activations (size from the core)
  T* resid_mid = nullptr;    // (B, T, C)  resid_in + wo·attn_out
  T* ffn_norm = nullptr;     // (B, T, C)
  T* ffn_rstd = nullptr;     // (B, T)
  T* ffn_gate_up = nullptr;  // (B, T, 2Hf)
  T* ffn_act = nullptr;      // (B, T, Hf)  silu(gate) * up
};

template <typename T>
struct GradScratch {
  T* dresid = nullptr;     // (B, T, C)  gradient of the residual stream, carried down the layers
  T* dnorm = nullptr;      // (B, T, C)  gradient of a norm output
  T* dq = nullptr;         // (B, T, C)
  T* dk = nullptr;         // (B, T, C)
  T* dv = nullptr;         // (B, T, C)
  T* dattn_out = nullptr;  // (B, T, C)
  T* dgate_up = nullptr;   // (B, T, 2Hf)
  T* dact = nullptr;       // (B, T, Hf)
  T* dlogits = nullptr;    // (B, T, V)
  T* dlosses = nullptr;    // (B, T)
  T* attn_scratch = nullptr;  // attention core's backward scratch
  // The weight gradients' partial sums over the threads' tokens (kernels/gemm.h, GemmSplit::k_sums;
  // float only, else empty), bound for the backward by model_forward.cpp.
  T* gemm_partials = nullptr;
  int64_t gemm_partials_size = 0;
};

// Elements of GradScratch::gemm_partials: (threads - 1) copies of the largest weight gradient a
// split product can write (kernels/gemm.h), the largest being the FFN's (2 Hf, C), the head's
// (V, C) or a (C, C) projection.
int64_t activation_gemm_partials(const ModelSpec& spec, int B, int T_len, int threads);

// bf16 copies of the activations that feed a matrix product (train.precision bf16):
// written by the forward, read again by the weight gradients of the backward.
struct BlockActsBf16 {
  uint16_t* attn_norm = nullptr;  // (B, T, C)   input of wq, wk, wv
  uint16_t* attn_out = nullptr;   // (B, T, C)   input of wo
  uint16_t* ffn_norm = nullptr;   // (B, T, C)   input of w13
  uint16_t* ffn_act = nullptr;    // (B, T, Hf)  input of w2
};

struct ActTensor {
  std::string name;
  int64_t offset = 0;
  std::vector<int64_t> shape;
};

template <typename T>
class Activations {
 public:
  // precision bf16 (float only) adds the bf16 copies below to the arena. threads: the threads the
  // kernels will run on, which the attention's scratch and the products' partials are sized for
  // (0: the pool's, thread_count(); 1 for a thread's own part of a batch, train/batch_shards.h).
  Activations(const ModelSpec& spec, int B, int T_len, Precision precision = Precision::fp32, int threads = 0);

  int B = 0, T_len = 0;
  int64_t pos0 = 0;  // ModelCarry::pos0 of the last model_forward, which its backward reads too
  const uint8_t* segment_start = nullptr;  // ModelCarry::segment_start of the last model_forward, likewise
  std::vector<BlockActs<T>> layers;
  T* resid_final = nullptr;  // (B, T, C)  output of the last block
  T* final_norm = nullptr;   // (B, T, C)
  T* final_rstd = nullptr;   // (B, T)
  T* logits = nullptr;       // (B, T, V)
  T* probs = nullptr;        // (B, T, V)
  T* losses = nullptr;       // (B, T)
  GradScratch<T> grad;
  // bf16 only (empty / null in fp32):
  std::vector<BlockActsBf16> layers_bf16;
  uint16_t* final_norm_bf16 = nullptr;  // (B, T, C)  input of the LM head
  // A gradient's bf16 copy before it enters the products of its backward, one at a
  // time: (B, T, max(V, 2Hf, C)).
  uint16_t* dout_bf16 = nullptr;
  bool bf16() const { return final_norm_bf16 != nullptr; }

  const std::vector<ActTensor>& tensors() const { return tensors_; }  // every named buffer
  T* tensor_data(const ActTensor& t) { return arena_.data() + t.offset; }
  int64_t bytes() const { return arena_.size() * static_cast<int64_t>(sizeof(T)); }
  int64_t attn_scratch_size() const { return attn_scratch_size_; }

 private:
  Arena<T> arena_;
  std::vector<ActTensor> tensors_;
  int64_t attn_scratch_size_ = 0;
};

}  // namespace rfa
