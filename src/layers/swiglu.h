#pragma once
// The elementwise part of a SwiGLU feed-forward. W1 and W3 are fused into one
// linear producing gate_up with row layout [gate (Hf) | up (Hf)]:
//   out = silu(gate) * up,   silu(g) = g * sigmoid(g)
#include <cstdint>

namespace rfa {

template <typename T>
void swiglu_forward(T* out,            // (N, Hf)
                    const T* gate_up,  // (N, 2*Hf)
                    int64_t N, int Hf);

template <typename T>
void swiglu_backward(T* dgate_up,        // (N, 2*Hf) = (overwritten: no zeroing needed)
                     const T* dout,      // (N, Hf)
                     const T* gate_up,   // (N, 2*Hf)
                     int64_t N, int Hf);

}  // namespace rfa
