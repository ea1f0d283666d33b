#include "attention/feature_map.h"

#include <cmath>

#include "attention/vector_math.h"

namespace rfa {

int feature_count(FeatureMapKind kind, int D) { return kind == FeatureMapKind::gaussian ? 2 * D : D; }

template <typename T>
T l2_normalize_forward(T* xbar, const T* x, int Dh, T eps_n) {
  T sum_sq = 0;
  for (int j = 0; j < Dh; ++j) sum_sq += x[j] * x[j];
  T r = T(1) / std::sqrt(sum_sq + eps_n);
  for (int j = 0; j < Dh; ++j) xbar[j] = x[j] * r;
  return r;
}

template <typename T>
void l2_normalize_backward(T* dx, const T* dxbar, const T* xbar, T r, int Dh) {
  // x̄ = r x, r = (|x|² + eps)^(-1/2):  dx = r (dx̄ - x̄ (x̄·dx̄)).
  T dot = 0;
  for (int j = 0; j < Dh; ++j) dot += xbar[j] * dxbar[j];
  for (int j = 0; j < Dh; ++j) dx[j] += r * (dxbar[j] - xbar[j] * dot);
}

template <typename T>
void feature_map_transpose(T* Wt, const T* W, int D, int Dh) {
  for (int i = 0; i < D; ++i)
    for (int j = 0; j < Dh; ++j) Wt[static_cast<size_t>(j) * D + i] = W[static_cast<size_t>(i) * Dh + j];
}

template <typename T>
void feature_map_forward(T* phi, T* u, const T* xbar, const T* sigma, const T* Wt, FeatureMapKind kind, int D,
                         int Dh) {
  // u = W (sigma ⊙ x̄) = sum_j (sigma_j x̄_j) Wt[j, :]
  for (int i = 0; i < D; ++i) u[i] = 0;
  for (int j = 0; j < Dh; ++j) axpy(u, sigma[j] * xbar[j], Wt + static_cast<size_t>(j) * D, D);
  const T scale = T(1) / std::sqrt(T(D));
  if (kind == FeatureMapKind::gaussian) {
    sincos_row(phi, phi + D, u, D);
    for (int i = 0; i < 2 * D; ++i) phi[i] *= scale;
  } else {
    for (int i = 0; i < D; ++i) phi[i] = u[i] > T(0) ? u[i] * scale : T(0);
  }
}

template <typename T>
void feature_map_backward(T* dxbar, T* dsigma, T* du, const T* dphi, const T* phi, const T* xbar, const T* sigma,
                          const T* W, FeatureMapKind kind, int D, int Dh) {
  if (kind == FeatureMapKind::gaussian) {
    // phi_i = sin(u_i)/sqrt(D), phi_{D+i} = cos(u_i)/sqrt(D):
    //   du_i = dphi_i cos(u_i)/sqrt(D) - dphi_{D+i} sin(u_i)/sqrt(D) = dphi_i phi_{D+i} - dphi_{D+i} phi_i
    for (int i = 0; i < D; ++i) du[i] = dphi[i] * phi[D + i] - dphi[D + i] * phi[i];
  } else {
    // phi_i = relu(u_i)/sqrt(D); u_i > 0 exactly where phi_i > 0.
    const T scale = T(1) / std::sqrt(T(D));
    for (int i = 0; i < D; ++i) du[i] = phi[i] > T(0) ? dphi[i] * scale : T(0);
  }
  // u = W (sigma ⊙ x̄):  w = Wᵀ du,  dx̄ += sigma ⊙ w,  dsigma += x̄ ⊙ w.
  // Accumulate w into dsigma/dxbar directly: j is contiguous in W's rows.
  for (int i = 0; i < D; ++i) {
    const T* w = W + static_cast<size_t>(i) * Dh;
    const T g = du[i];
    for (int j = 0; j < Dh; ++j) {
      dxbar[j] += g * w[j] * sigma[j];
      dsigma[j] += g * w[j] * xbar[j];
    }
  }
}

#define RFA_INSTANTIATE(T)                                                                                  \
  template T l2_normalize_forward<T>(T*, const T*, int, T);                                                 \
  template void l2_normalize_backward<T>(T*, const T*, const T*, T, int);                                   \
  template void feature_map_forward<T>(T*, T*, const T*, const T*, const T*, FeatureMapKind, int, int);     \
  template void feature_map_transpose<T>(T*, const T*, int, int);                                           \
  template void feature_map_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*,       \
                                        FeatureMapKind, int, int);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
