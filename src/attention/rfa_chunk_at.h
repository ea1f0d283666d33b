#pragma once
// Internal: where one (b, h) task of the chunked forward and backward is (its problem, its
// row and head, its current chunk) and the indexing both passes share.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "attention/attention_dims.h"
#include "attention/rfa_attention.h"
#include "attention/rfa_layout.h"
#include "attention/rfa_scratch.h"
#include "core/segment_starts.h"

namespace rfa {

// kFeature: the feature gate, whose gate values are (n, F) per chunk; else (n).
template <typename T, bool kFeature>
struct RfaChunkAt {
  const RfaConfig& c;
  const AttentionDims& d;
  const RfaSavedLayout& L;
  const RfaScratchDims& sd;
  int b, h;
  int64_t bh;               // b * H + h
  int ci = 0, t0 = 0, n = 0;  // the chunk: index, first row, rows
  size_t bht0 = 0;          // (B, H, T) index of its first row
  // Document boundaries of the chunk's rows (n), or null (none in this call); reset_inner: one
  // past its first row (then even ungated RFA has a mask M inside the chunk).
  const uint8_t* reset = nullptr;
  bool reset_inner = false;

  void chunk_at(int chunk, const RfaInputs<T>& in) {
    const int Cc = int(sd.Cc);
    ci = chunk, t0 = ci * Cc, n = std::min(Cc, d.T - t0);
    bht0 = static_cast<size_t>(bh) * d.T + t0;
    reset = in.segment_start ? in.segment_start + static_cast<size_t>(b) * d.T + t0 : nullptr;
    reset_inner = reset && segment_any(reset, 1, n - 1);
  }
  // Row j's position, the time discount's t: absolute (pos0 + t), or in its own document.
  int64_t position(const RfaInputs<T>& in, int j) const {
    if (!in.segment_start) return in.pos0_of(b) + t0 + j;
    return segment_position(in.segment_start + static_cast<size_t>(b) * d.T, t0 + j, in.pos0_of(b));
  }
  // Row i of the chunk in a (B, T, C) activation, at this head's columns.
  size_t row_of(int i) const { return task_row(bh, t0 + i); }
  // Row t of task bh = (b, h) (this one or another: the prefetches of the next), at its head's columns.
  size_t task_row(int64_t task, int t) const {
    return (static_cast<size_t>(task / d.H) * d.T + t) * d.C() + static_cast<size_t>(task % d.H) * d.Dh;
  }
  // A gate factor of row i, feature f: buf (n, W).
  T gate_at(const T* buf, int i, int f) const { return kFeature ? buf[size_t(i) * L.F + f] : buf[i]; }
  // Row i's gate pre-activations (and their gradients) in the (B, T, H, W) layout.
  size_t gate_row(int i) const {
    const size_t W = kFeature ? size_t(L.F) : 1;
    return ((static_cast<size_t>(b) * d.T + t0 + i) * d.H + h) * W;
  }
};

}  // namespace rfa
