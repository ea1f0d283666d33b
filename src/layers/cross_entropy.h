#pragma once
// Fused softmax + cross-entropy over logits (N, V).
//   probs = softmax(logits) (max-subtracted), losses[n] = -log probs[n, targets[n]]
// A negative target means "ignore": loss 0, no gradient (probs are still written).
#include <cstdint>

namespace rfa {

// Targets must be < V (asserted); negative = ignored.
template <typename T>
void cross_entropy_forward(T* losses,               // (N)
                           T* probs,                // (N, V)
                           const T* logits,         // (N, V)
                           const int32_t* targets,  // (N)
                           int64_t N, int V);

// dlogits[n] = dlosses[n] * (probs[n] - onehot(targets[n])); 0 for ignored rows.
// Overwrites (the logits' only consumer): the caller needs no zeroed buffer.
template <typename T>
void cross_entropy_backward(T* dlogits,              // (N, V) =
                            const T* probs,          // (N, V)
                            const int32_t* targets,  // (N)
                            const T* dlosses,        // (N)
                            int64_t N, int V);

}  // namespace rfa
