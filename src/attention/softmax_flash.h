#pragma once
// Causal softmax attention without the (T, T) matrix (flash-attention style),
// per (batch row, head):
//   s_ij = q_i·k_j / sqrt(Dh) (j <= i),  p_ij = exp(s_ij - lse_i),  out_i = sum_j p_ij v_j
// The forward walks key blocks with a running row max and sum and saves
// lse_i = log sum_j exp(s_ij) (B, H, T) and the diagonal blocks' p (each query block's own key
// block, (B, H, T/64, 64, 64)); the backward recomputes p block by block from lse off the
// diagonal. Memory is linear in T: saved B*H*T*65, scratch O(T * Dh) per thread.
// softmax_attention.h keeps the (B, H, T, T) path as the reference twin.
// Document boundaries (starts (B, T), nonzero at a document's first token, or null): query i
// attends only to keys j in [first(i), i], first(i) its document's first token (0 before the
// row's first boundary); key blocks wholly before every query's document are skipped.
// A sliding window (window > 0, attention.window; docs/hybrid.md): query i attends only to
// keys j in [max(first(i), i - window + 1), i], and key blocks wholly outside every query's
// window are skipped in both passes, so the cost is O(T * window) rather than O(T^2).
// window 0 (or null starts) runs the unmasked code exactly.
#include <cstddef>
#include <cstdint>

#include "attention/attention_dims.h"

namespace rfa {

// Query and key block size (rows of one tile). 64 x 64 float tiles (16 KiB) keep
// a step's working set (q tile, k tile, v tile, s tile, out accumulator) in L2
// and each operand in L1.
inline constexpr int kFlashBlock = 64;

size_t softmax_flash_saved_size(const AttentionDims& d);  // elements: lse (B*H*T), then the diagonal p
// Scratch of forward and backward for `threads` threads (thread_count() at call time or more).
size_t softmax_flash_workspace_size(const AttentionDims& d, int threads);

// out: (B, T, C) overwritten. saved (softmax_flash_saved_size): lse (B, H, T) first, then the
// diagonal blocks' p, for the backward.
// q, k, v: (B, T, C), RoPE already applied.
template <typename T>
void softmax_flash_forward(T* out, T* saved, Workspace<T> workspace, const T* q, const T* k, const T* v,
                           const AttentionDims& d, const uint8_t* starts = nullptr, int window = 0);

// Overwrites dq, dk, dv: (B, T, C). dout: (B, T, C); out and saved: the forward's.
template <typename T>
void softmax_flash_backward(T* dq, T* dk, T* dv, Workspace<T> workspace, const T* dout, const T* out,
                            const T* saved, const T* q, const T* k, const T* v, const AttentionDims& d,
                            const uint8_t* starts = nullptr, int window = 0);

}  // namespace rfa
