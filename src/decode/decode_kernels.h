#pragma once
// Row kernels of the one-token decoding step. A step over B = 1 row is tiny (~1 MFLOP for
// the reference model): an OpenMP fork/join costs as much as the work, so these run on the
// calling thread (SwiGLU's rows split over the pool from a few tens of rows, where its exps
// outweigh the fork). Plain loops written so -O3 vectorises them (omp simd reductions, no
// -ffast-math). The layer kernels (layers/) are their reference twins in the tests. (The
// step's RoPE is layers/rope.h's rope_rows.)
#include <cstdint>


namespace rfa {

// out = x * rstd * weight, rstd = 1/sqrt(mean(x²) + eps), per row.
template <typename T>
void rmsnorm_rows(T* out /*(B, C)*/, const T* x /*(B, C)*/, const T* weight /*(C)*/, int B, int C, double eps);

// out = silu(gate) * up with gate_up rows [gate (Hf) | up (Hf)].
template <typename T>
void swiglu_rows(T* out /*(B, Hf)*/, const T* gate_up /*(B, 2Hf)*/, int B, int Hf);

}  // namespace rfa
