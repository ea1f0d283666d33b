#pragma once
// The output norm and gate every attention kind may end with (attention.output_gate;
// docs/output-gate.md), as in GLA, Gated DeltaNet and RetNet. Per token, with o the kind's
// output (C) = H heads of Dh, n the layer's normed input (C):
//
//   y_h = o_h * r_h,      r_h = (mean_d o_h[d]^2 + eps)^(-1/2)   (an RMSNorm per head)
//   u   = y * w_norm                                             (w_norm (C), init 1)
//   z   = n W_gᵀ                                                 (W_g (C, C): out, in)
//   out = u * SiLU(z)
//
// and then the layer's output projection wo, as before. Parameters layers.{l}.attn.out_norm
// (C) and layers.{l}.attn.out_gate (C, C), after the kind's and the short convolution's.
// The dispatcher (attention_core.cpp, attention_decode.cpp) runs it after the kind; it has no
// state: decoding needs only a (B, C) buffer for z.
//
// The raw kernels neither validate nor allocate; the products z = n W_gᵀ and their
// backward are gemm calls outside any parallel region.
#include <cstdint>

#include "attention/attention_core.h"
#include "kernels/gemm.h"

namespace rfa {

// Elements the training forward saves when the option is on: o and z, each (B, T, C); else 0.
int64_t output_gate_saved_size(const AttentionSpec& spec, int B, int T);
// Elements of the scratch the backward takes before the kind's: d o, d z and du * y, each
// (B, T, C); else 0.
int64_t output_gate_scratch_size(const AttentionSpec& spec, int B, int T);

// out (N, C) from o (N, C; out may alias it) and z (N, C), as above.
template <typename T>
void output_gate_forward(T* out, const T* o, const T* z, const T* w_norm, int64_t N, int H, int Dh, double eps);

// The backward of the forward line, from dout (N, C):
//   du = dout * SiLU(z)          dz = dout * u * SiLU'(z)
//   dy = du * w_norm             d w_norm[c] += sum_n du[n, c] y[n, c]
//   do_h = r_h (dy_h - y_h * mean_d(dy_h[d] y_h[d]))
// do, dz (N, C) overwritten; prod (N, C) scratch (du * y, summed per channel block in row order:
// the result does not depend on the thread count); dw_norm (C) added into.
template <typename T>
void output_gate_backward(T* d_o, T* dz, T* prod, T* dw_norm, const T* dout, const T* o, const T* z,
                          const T* w_norm, int64_t N, int H, int Dh, double eps);

// ---- Calls, as the dispatcher runs them ------------------------------------------------

// z (N, C) = n (N, C) W_gᵀ, then out = gate(o, z). w_norm, w_gate: the layer's out_norm and out_gate.
// step_packed: the decode step's rows, W_g packed (kernels/step_gemm.h), whose product is
// batch-invariant.
template <typename T>
void output_gate_apply(const AttentionSpec& spec, const T* w_norm, const T* w_gate, T* out, const T* o, T* z,
                       const T* n, int64_t N, GemmThreads threads = GemmThreads::pool,
                       const T* step_packed = nullptr);

// The backward: d_o (N, C) written (the kind's dout), dn (N, C) overwritten or added into
// (dn_write), dw_norm and dw_gate added into. scratch: output_gate_scratch_size elements; d_o is
// its first (N, C), so it stays valid while the kind's backward uses the scratch after it.
template <typename T>
void output_gate_apply_backward(const AttentionSpec& spec, const T* w_norm, T* dw_norm, T* dw_gate, T* scratch,
                                const T* dout, const T* o, const T* z, const T* n, int64_t N);
// The second half of that backward, after the kind's: dn (+)= dz W_g, dz as the first half left it.
template <typename T>
void output_gate_apply_backward_dn(const AttentionSpec& spec, const T* w_gate, const T* scratch, T* dn, bool add,
                                   int64_t N);

}  // namespace rfa
