#pragma once
// The RFA-Gate's projections, for every row and head at once: one gemm each way
// outside the per-(b, h) tasks (a dot product per token and head inside them was a
// chain of dependent multiply-adds, and its gradients two axpys per token and head).
// W = 1 for the scalar gate, F for the feature gate (docs/rfa-attention.md section 5).
//   a (B*T, H*W) = n (B*T, C) gate_wᵀ + gate_b,   gate_w (H*W, C), gate_b (H*W)
#include <cstdint>

namespace rfa {

// a: (rows, HW) overwritten; the (B, T, H, W) layout.
template <typename T>
void rfa_gate_preact(T* a, const T* n, const T* gate_w, const T* gate_b, int64_t rows, int HW, int C);

// From da (rows, HW): dn = da gate_w (overwritten; skipped when dn is null),
// dgate_w += daᵀ n, dgate_b += column sums of da.
template <typename T>
void rfa_gate_param_grads(T* dn, T* dgate_w, T* dgate_b, const T* da, const T* n, const T* gate_w, int64_t rows,
                          int HW, int C);

}  // namespace rfa
