#pragma once
// RFA's random feature maps for one row (one token of one head), docs/rfa-attention.md section 1:
//   x̄ = x / sqrt(|x|² + eps_n),   u = W (sigma ⊙ x̄)                W: (D, Dh)
//   gaussian: phi = (1/sqrt(D)) [sin u, cos u]   (F = 2D features, |phi| = 1)
//   arccos:   phi = (1/sqrt(D)) relu(u)          (F = D features)
// Row functions are called per token inside the attention cores' parallel tasks:
// they never allocate; the caller passes scratch.
#include <cmath>
#include <cstddef>

#include "config/config.h"

namespace rfa {

// F: number of features per row for a kind (2D gaussian, D arccos).
int feature_count(FeatureMapKind kind, int D);

// r = 1/sqrt(|x|² + eps_n) from the row's sum of squares: the one formula of the chunked
// forward (rfa_chunked_forward.cpp, in blocks of rows), the recurrent step (rfa_decode_step.cpp)
// and l2_normalize_forward, whose results the tests hold equal.
template <typename T>
inline T l2_inverse_norm(T sum_squares, T eps_n) {
  return T(1) / std::sqrt(sum_squares + eps_n);
}

// x̄ = x * r with r = 1/sqrt(|x|² + eps_n); returns r (saved for the backward).
template <typename T>
T l2_normalize_forward(T* xbar /*(Dh)*/, const T* x /*(Dh)*/, int Dh, T eps_n);

// Overwrites dx = r (dx̄ - x̄ (x̄·dx̄)).
template <typename T>
void l2_normalize_backward(T* dx /*(Dh)*/, const T* dxbar /*(Dh)*/, const T* xbar /*(Dh)*/, T r, int Dh);

// phi (F) from u (D): [sin u, cos u]/sqrt(D) or relu(u)/sqrt(D).
template <typename T>
void feature_map_from_u(T* phi /*(F)*/, const T* u /*(D)*/, FeatureMapKind kind, int D);

// One head's W (D, Dh) packed for the row functions, leading dimensions padded
// to pad16 so vecmat (kernels/vector_math.h) reads whole vectors:
//   forward reads Wt (Dh, pad16(D)), backward reads Wp (D, pad16(Dh)).
size_t feature_map_packed_size(int D, int Dh);  // elements of either pack
template <typename T>
void feature_map_pack_forward(T* Wt, const T* W /*(D, Dh)*/, int D, int Dh);
template <typename T>
void feature_map_pack_backward(T* Wp, const T* W /*(D, Dh)*/, int D, int Dh);

// phi (F) from the normalised row x̄:  u = sum_j (sigma_j x̄_j) Wt[j, :].
// scratch: (D + Dh).
template <typename T>
void feature_map_forward(T* phi /*(F)*/, T* scratch /*(D + Dh)*/, const T* xbar /*(Dh)*/, const T* sigma /*(Dh)*/,
                         const T* Wt /*(Dh, pad16(D))*/, FeatureMapKind kind, int D, int Dh);

// From dphi and the forward's phi (sin/cos and relu derivatives are read off phi):
//   du; w = Wᵀ du;  dxbar += sigma ⊙ w;  dsigma += x̄ ⊙ w.   scratch: (D + Dh).
template <typename T>
void feature_map_backward(T* dxbar /*(Dh)*/, T* dsigma /*(Dh)*/, T* scratch /*(D + Dh)*/, const T* dphi /*(F)*/,
                          const T* phi /*(F)*/, const T* xbar /*(Dh)*/, const T* sigma /*(Dh)*/,
                          const T* Wp /*(D, pad16(Dh))*/, FeatureMapKind kind, int D, int Dh);

// The same over N rows at once (a chunk), as matrix products. sx: (N, Dh) rows of
// sigma ⊙ x̄; u: (N, D) scratch.
template <typename T>
void feature_map_forward_rows(T* phi /*(N, F)*/, T* u /*(N, D)*/, const T* sx /*(N, Dh)*/,
                              const T* Wt /*(Dh, pad16(D))*/, FeatureMapKind kind, int N, int D, int Dh);

// w (N, Dh) = Wᵀ du per row, overwritten; du: (N, D) scratch. The caller finishes
// with dx̄ = sigma ⊙ w and dsigma += x̄ ⊙ w.
template <typename T>
void feature_map_backward_rows(T* w /*(N, Dh)*/, T* du /*(N, D)*/, const T* dphi /*(N, F)*/, const T* phi /*(N, F)*/,
                               const T* Wp /*(D, pad16(Dh))*/, FeatureMapKind kind, int N, int D, int Dh);

}  // namespace rfa
