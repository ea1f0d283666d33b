#pragma once
// RFA's random feature maps for one row (one token of one head), design section 1:
//   x̄ = x / sqrt(|x|² + eps_n),   u = W (sigma ⊙ x̄)                W: (D, Dh)
//   gaussian: phi = (1/sqrt(D)) [sin u, cos u]   (F = 2D features, |phi| = 1)
//   arccos:   phi = (1/sqrt(D)) relu(u)          (F = D features)
// Row functions are called per token inside the attention cores' parallel tasks:
// they never allocate; the caller passes scratch.
#include "config/config.h"

namespace rfa {

// F: number of features per row for a kind (2D gaussian, D arccos).
int feature_count(FeatureMapKind kind, int D);

// x̄ = x * r with r = 1/sqrt(|x|² + eps_n); returns r (saved for the backward).
template <typename T>
T l2_normalize_forward(T* xbar /*(Dh)*/, const T* x /*(Dh)*/, int Dh, T eps_n);

// Adds dx += r (dx̄ - x̄ (x̄·dx̄)).
template <typename T>
void l2_normalize_backward(T* dx /*(Dh)*/, const T* dxbar /*(Dh)*/, const T* xbar /*(Dh)*/, T r, int Dh);

// phi (F) from the normalised row x̄. u_scratch: (D). Takes W transposed, Wt (Dh, D),
// so u = sum_j (sigma_j x̄_j) Wt[j, :] runs contiguously over D (see feature_map_transpose).
template <typename T>
void feature_map_forward(T* phi /*(F)*/, T* u_scratch /*(D)*/, const T* xbar /*(Dh)*/, const T* sigma /*(Dh)*/,
                         const T* Wt /*(Dh, D)*/, FeatureMapKind kind, int D, int Dh);

// Wt (Dh, D) = transpose of one head's W (D, Dh).
template <typename T>
void feature_map_transpose(T* Wt /*(Dh, D)*/, const T* W /*(D, Dh)*/, int D, int Dh);

// From dphi and the forward's phi (sin/cos and relu derivatives are read off phi):
//   du; w = Wᵀ du;  dxbar += sigma ⊙ w;  dsigma += x̄ ⊙ w.   du_scratch: (D).
template <typename T>
void feature_map_backward(T* dxbar /*(Dh)*/, T* dsigma /*(Dh)*/, T* du_scratch /*(D)*/, const T* dphi /*(F)*/,
                          const T* phi /*(F)*/, const T* xbar /*(Dh)*/, const T* sigma /*(Dh)*/,
                          const T* W /*(D, Dh)*/, FeatureMapKind kind, int D, int Dh);

}  // namespace rfa
