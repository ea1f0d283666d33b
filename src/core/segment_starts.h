#pragma once
// Document boundaries of a training call (AttentionCall::segment_start, data.document_boundaries
// reset): one row's flags (T), nonzero at a document's first token. A row's tokens before its
// first flag belong to a document that began earlier (before row t = 0: its positions continue
// from pos0 and it may continue a carried state); a flag at t = 0 starts the row empty at
// position 0. docs/fine-tuning.md "Documents" has what each attention kind does with them.
#include <cstdint>

namespace rfa {

// The first token of t's document: the last s <= t with starts[s] != 0, or -1 (the document
// began before row t = 0). O(t - s).
inline int segment_first(const uint8_t* starts /*(T)*/, int t) {
  for (; t >= 0; --t)
    if (starts[t]) return t;
  return -1;
}

// The first token after t that starts a document, or T when none does.
inline int segment_next(const uint8_t* starts /*(T)*/, int t, int T) {
  for (++t; t < T; ++t)
    if (starts[t]) return t;
  return T;
}

// Token t's position in its own document (RoPE's, the time discount's): t - its first token,
// or pos0 + t before the row's first boundary.
inline int64_t segment_position(const uint8_t* starts /*(T)*/, int t, int64_t pos0) {
  const int s = segment_first(starts, t);
  return s < 0 ? pos0 + t : int64_t(t - s);
}

// Whether any of rows [t0, t0 + n) starts a document.
inline bool segment_any(const uint8_t* starts /*(T)*/, int t0, int n) {
  bool any = false;
  for (int t = t0; t < t0 + n; ++t) any |= starts[t] != 0;
  return any;
}

}  // namespace rfa
