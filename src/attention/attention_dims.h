#pragma once
// Shapes shared by every attention core. Activations are (B, T, C) with head h
// at columns h*Dh .. h*Dh+Dh-1, i.e. (B, T, H, Dh) row-major; C = H * Dh.
#include <cstddef>
#include <cstdint>

namespace rfa {

struct AttentionDims {
  int B = 0;   // batch rows
  int T = 0;   // sequence length
  int H = 0;   // heads
  int Dh = 0;  // head size
  int C() const { return H * Dh; }
};

// A caller-provided buffer; kernels check its size against *_workspace_size and never allocate.
template <typename T>
struct Workspace {
  T* data = nullptr;
  size_t size = 0;  // elements of T
};

}  // namespace rfa
