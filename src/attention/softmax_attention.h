#pragma once
// Causal softmax attention, the reference twin of softmax_flash.h (which training
// and evaluation use): per (batch row, head)
//   P = softmax(mask(q kᵀ / sqrt(Dh))),  out = P v.
// The probabilities are saved for the backward (B, H, T, T): quadratic in T, kept
// for the tests because it is the plain form of the math.
#include <cstddef>

#include "attention/attention_dims.h"

namespace rfa {

size_t softmax_attention_saved_size(const AttentionDims& d);  // elements: B*H*T*T (the probs)
// Scratch of forward and backward per thread: a transposed head, three padded
// heads and three (T, T) matrices (see softmax_attention.cpp).
// threads = thread_count() at call time (or more).
size_t softmax_attention_workspace_size(const AttentionDims& d, int threads);

// out: (B, T, C) overwritten. probs: (B, H, T, T) saved for the backward (j > i entries are 0).
// q, k, v: (B, T, C). RoPE, if any, is already applied to q and k.
template <typename T>
void softmax_attention_forward_reference(T* out, T* probs, Workspace<T> workspace, const T* q, const T* k, const T* v, const AttentionDims& d);

// Overwrites dq, dk, dv: (B, T, C) (no zeroing needed). dout: (B, T, C). probs from the forward.
template <typename T>
void softmax_attention_backward_reference(T* dq, T* dk, T* dv, Workspace<T> workspace, const T* dout, const T* probs,
                                const T* q, const T* k, const T* v, const AttentionDims& d);

}  // namespace rfa
