#pragma once
// The short causal depthwise convolution every attention kind may run on q, k and v before its
// own work (attention.short_conv = K taps; docs/short-conv.md). Per channel c of one row (T, C):
//
//   y[t, c] = sum_{j=0}^{K-1} w[j, c] * x[t - j, c]
//
// where x[t] for t < 0 is the row's history: the K-1 inputs before t = 0 (the previous
// segment's last ones when a state is carried, zeros at the start of a text). No bias and no
// activation; w starts as the identity (w[0, c] = 1, the other taps 0), so a model with the
// convolution starts as the same function as one without. The dispatcher (attention_core.cpp,
// attention_decode.cpp) runs it before RoPE; parameters layers.{l}.attn.conv_{q,k,v} (K, C):
// tap-major, so that the kernels run over contiguous channels.
//
// The raw kernels neither validate nor allocate. `ext` is one row's history and inputs back to
// back, (K-1+T, C): rows [0, K-1) the history, oldest first, rows [K-1, K-1+T) the inputs;
// what the training forward saves for the backward.
#include <cstdint>

#include "attention/attention_core.h"

namespace rfa {

// Elements of one row's history of the three tensors, (3, K-1, C); 0 when short_conv is 0.
int64_t short_conv_history_size(const AttentionSpec& spec);
// Elements of the ext rows of B rows of T tokens for the three tensors, (3, B, K-1+T, C).
int64_t short_conv_ext_size(const AttentionSpec& spec, int B, int T);

// One row of one tensor, row by row: x (T, C) holds the inputs on entry, each copied into its ext
// row (rows [K-1, K-1+T)) before it is overwritten with its output; ext's history rows [0, K-1) are
// the caller's. starts: (T) document starts of the row, or null.
template <typename T>
void short_conv_forward(T* x, T* ext, const T* w, int T_len, int C, int K, const uint8_t* starts);

// The backward of the line above, channels [c0, c1):
//   dx[t, c] = sum_{j : t + j < T} w[j, c] dy[t + j, c]     (dy is overwritten with dx, in place:
//              ascending t reads only rows >= t, which are still dy)
//   dw[j, c] += sum_t dy[t, c] ext[K-1+t-j, c]
// dy_dx (T, C), dw (K, C) added into; the history gets no gradient (a carried state is a constant).
template <typename T>
void short_conv_backward(T* dy_dx, T* dw, const T* ext, const T* w, int T_len, int C, int K, int c0, int c1,
                         const uint8_t* starts);

// One token: x (C) becomes y = sum_j w[j, :] x[t - j], and hist (K-1, C) drops its oldest row and
// takes x as its newest.
template <typename T>
void short_conv_step(T* x, T* hist, const T* w, int C, int K);

// ---- Calls: the three tensors of B rows, as the dispatcher runs them -----------------------

// w: the three weights (q, k, v), each (K, C). x: q, k, v (B, T, C), convolved in place.
// ext: short_conv_ext_size(spec, B, T) elements (kept for the backward when it is the saved
// part). hist_in: row b's history at hist_in + b * hist_stride, (3, K-1, C), or null = zeros;
// hist_out (may alias hist_in): where each row's history after the segment goes, or null.
template <typename T>
struct ShortConvCall {
  const T* w[3] = {};
  T* x[3] = {};
  int B = 0, T_len = 0;
  T* ext = nullptr;
  const T* hist_in = nullptr;
  T* hist_out = nullptr;
  int64_t hist_stride = 0;
  const uint8_t* starts = nullptr;  // (B, T) document starts (AttentionCall::segment_start); null = none
};
template <typename T>
void short_conv_apply(const AttentionSpec& spec, const ShortConvCall<T>& call);

// The backward: dx[i] (B, T, C) holds dy of tensor i on entry and dx on exit; dw[i] (K, C) added into.
// starts: the forward's document starts, or null.
template <typename T>
void short_conv_apply_backward(const AttentionSpec& spec, const T* const w[3], T* const dw[3], T* const dx[3],
                               const T* ext, int B, int T_len, const uint8_t* starts = nullptr);

// One token per listed row: x[i] (n, C) in place; listed row r's history (3, K-1, C) at
// hist + rows.state_row(r) * hist_stride.
template <typename T>
void short_conv_apply_step(const AttentionSpec& spec, const T* const w[3], T* const x[3], T* hist,
                           int64_t hist_stride, const AttentionRows& rows);

}  // namespace rfa
