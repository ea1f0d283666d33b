#pragma once
// FLOP count of one training step (forward + backward), for benchmarks.
//   matmul:    6 * N_matmul * tokens, N_matmul = L (4C² + 3 C Hf) + V C (the LM head; the
//              embedding lookup is not a matmul). 2 FLOPs per multiply-add, backward = 2x forward.
//   attention: 3x the forward's attention-core FLOPs per token per layer:
//     softmax (causal, only the lower triangle counted): q·k and p·v over on average
//       (T+1)/2 keys:                   2 * 2 * C * (T+1)/2 = 2 C (T+1)
//     RFA (per head, F features, c = min(chunk, T), n = ceil(T / c) chunks), what runs:
//       feature maps of q and k:        2 * 2 D Dh
//       inter-chunk q̂ S and state update: 2 * 2 F (Dh+1) (n-1)/n (none before the first chunk's
//                                       state exists, none after the last)
//       intra-chunk Q̂ K̃ᵀ and its V' over the causal triangle: (2 F + 2 (Dh+1)) (c+1)/2
// Elementwise work (norms, SwiGLU, softmax exp, cross-entropy) is not counted.
#include <cstdint>

#include "model/model_spec.h"

namespace rfa {

struct FlopCount {
  double matmul = 0;     // per step
  double attention = 0;  // per step
  double total() const { return matmul + attention; }
};

int64_t model_matmul_params(const ModelSpec& spec);  // N_matmul above
FlopCount model_train_flops(const ModelSpec& spec, int64_t batch, int64_t T);

}  // namespace rfa
