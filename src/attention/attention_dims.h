#pragma once
// Shapes shared by every attention core. Activations are (B, T, C) with head h
// at columns h*Dh .. h*Dh+Dh-1, i.e. (B, T, H, Dh) row-major; C = H * Dh.
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace rfa {

struct AttentionDims {
  int B = 0;   // batch rows
  int T = 0;   // sequence length
  int H = 0;   // heads
  int Dh = 0;  // head size
  int C() const { return H * Dh; }
};

// The rows one decoding step moves: input row i (of n) is state row row[i] at absolute
// position pos[i] (its cache length, its RoPE angle, its time discount). Rows not listed
// stay as they are (idle).
struct AttentionRows {
  int n = 0;
  const int* row = nullptr;      // (n) state rows, distinct; null = rows first .. first + n - 1
  const int64_t* pos = nullptr;  // (n)
  int first = 0;                 // with row null: the state row of row 0 (a part of a step's rows)
  int state_row(int i) const { return row ? row[i] : first + i; }
  // Rows [r0, r1) of these as rows of their own (their inputs start r0 rows further on).
  AttentionRows part(int r0, int r1) const { return {r1 - r0, row ? row + r0 : nullptr, pos + r0, first + r0}; }
};

// A tensor shape of at most 6 dimensions held without allocation (what the hot path asks
// a kind for, e.g. the carried state's shape on every forward).
struct SmallShape {
  std::array<int64_t, 6> dims{};
  int rank = 0;
  SmallShape() = default;
  SmallShape(std::initializer_list<int64_t> d) {
    for (int64_t x : d) dims[static_cast<size_t>(rank++)] = x;
  }
  int64_t size() const {  // elements; 1 for rank 0
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[static_cast<size_t>(i)];
    return n;
  }
  std::vector<int64_t> vector() const { return {dims.begin(), dims.begin() + rank}; }
};

// A caller-provided buffer; kernels check its size against *_workspace_size and never allocate.
template <typename T>
struct Workspace {
  T* data = nullptr;
  size_t size = 0;  // elements of T
};

}  // namespace rfa
