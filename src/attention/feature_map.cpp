#include "attention/feature_map.h"

#include <algorithm>
#include <cmath>

#include "kernels/vector_math.h"

namespace rfa {

int feature_count(FeatureMapKind kind, int D) { return kind == FeatureMapKind::gaussian ? 2 * D : D; }

template <typename T>
T l2_normalize_forward(T* xbar, const T* x, int Dh, T eps_n) {
  const T r = l2_inverse_norm(dot(x, x, Dh), eps_n);
  RFA_OMP_SIMD_FULL  // xbar and x never overlap
  for (int j = 0; j < Dh; ++j) xbar[j] = x[j] * r;
  return r;
}

template <typename T>
void l2_normalize_backward(T* dx, const T* dxbar, const T* xbar, T r, int Dh) {
  // x̄ = r x, r = (|x|² + eps)^(-1/2):  dx = r (dx̄ - x̄ (x̄·dx̄)).
  const T xd = dot(xbar, dxbar, Dh);
  RFA_OMP_SIMD_FULL  // dx never overlaps dxbar or xbar
  for (int j = 0; j < Dh; ++j) dx[j] = r * (dxbar[j] - xbar[j] * xd);
}

size_t feature_map_packed_size(int D, int Dh) {
  return std::max(static_cast<size_t>(Dh) * pad16(D), static_cast<size_t>(D) * pad16(Dh));
}

template <typename T>
void feature_map_pack_forward(T* Wt, const T* W, int D, int Dh) {
  const int ld = pad16(D);
  for (int j = 0; j < Dh; ++j) {
    for (int i = 0; i < D; ++i) Wt[static_cast<size_t>(j) * ld + i] = W[static_cast<size_t>(i) * Dh + j];
    for (int i = D; i < ld; ++i) Wt[static_cast<size_t>(j) * ld + i] = T(0);
  }
}

template <typename T>
void feature_map_pack_backward(T* Wp, const T* W, int D, int Dh) {
  const int ld = pad16(Dh);
  for (int i = 0; i < D; ++i) {
    for (int j = 0; j < Dh; ++j) Wp[static_cast<size_t>(i) * ld + j] = W[static_cast<size_t>(i) * Dh + j];
    for (int j = Dh; j < ld; ++j) Wp[static_cast<size_t>(i) * ld + j] = T(0);
  }
}

template <typename T>
void feature_map_from_u(T* phi, const T* u, FeatureMapKind kind, int D) {
  const T scale = T(1) / std::sqrt(T(D));
  if (kind == FeatureMapKind::gaussian) {
    sincos_row(phi, phi + D, u, D, scale);
  } else {
    for (int f = 0; f < D; ++f) phi[f] = u[f] > T(0) ? u[f] * scale : T(0);
  }
}

template <typename T>
void feature_map_forward(T* phi, T* scratch, const T* xbar, const T* sigma, const T* Wt, FeatureMapKind kind, int D,
                         int Dh) {
  T* u = scratch;       // (D)
  T* sx = scratch + D;  // (Dh)
  // u = W (sigma ⊙ x̄)
  for (int j = 0; j < Dh; ++j) sx[j] = sigma[j] * xbar[j];
  vecmat(u, sx, Wt, Dh, D, pad16(D), T(1), false);
  feature_map_from_u(phi, u, kind, D);
}

template <typename T>
void feature_map_backward(T* dxbar, T* dsigma, T* scratch, const T* dphi, const T* phi, const T* xbar,
                          const T* sigma, const T* Wp, FeatureMapKind kind, int D, int Dh) {
  T* du = scratch;     // (D)
  T* w = scratch + D;  // (Dh)
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
  vecmat(w, du, Wp, D, Dh, pad16(Dh), T(1), false);
  for (int j = 0; j < Dh; ++j) {
    dxbar[j] += sigma[j] * w[j];
    dsigma[j] += xbar[j] * w[j];
  }
}

template <typename T>
void feature_map_forward_rows(T* phi, T* u, const T* sx, const T* Wt, FeatureMapKind kind, int N, int D, int Dh) {
  const int F = feature_count(kind, D);
  matmul(u, D, sx, Dh, Wt, pad16(D), N, Dh, D, T(1), false);  // u = (sigma ⊙ x̄) Wᵀ
  for (int i = 0; i < N; ++i) feature_map_from_u(phi + static_cast<size_t>(i) * F, u + static_cast<size_t>(i) * D, kind, D);
}

template <typename T>
void feature_map_backward_rows(T* w, T* du, const T* dphi, const T* phi, const T* Wp, FeatureMapKind kind, int N,
                               int D, int Dh) {
  const int F = feature_count(kind, D);
  const T scale = T(1) / std::sqrt(T(D));
  for (int i = 0; i < N; ++i) {
    const T* dp = dphi + static_cast<size_t>(i) * F;
    const T* p = phi + static_cast<size_t>(i) * F;
    T* dui = du + static_cast<size_t>(i) * D;
    if (kind == FeatureMapKind::gaussian) {
      for (int f = 0; f < D; ++f) dui[f] = dp[f] * p[D + f] - dp[D + f] * p[f];  // see feature_map_backward
    } else {
      for (int f = 0; f < D; ++f) dui[f] = p[f] > T(0) ? dp[f] * scale : T(0);
    }
  }
  matmul(w, Dh, du, D, Wp, pad16(Dh), N, D, Dh, T(1), false);  // w = du W
}

#define RFA_INSTANTIATE(T)                                                                                  \
  template T l2_normalize_forward<T>(T*, const T*, int, T);                                                 \
  template void l2_normalize_backward<T>(T*, const T*, const T*, T, int);                                   \
  template void feature_map_forward<T>(T*, T*, const T*, const T*, const T*, FeatureMapKind, int, int);     \
  template void feature_map_pack_forward<T>(T*, const T*, int, int);                                        \
  template void feature_map_from_u<T>(T*, const T*, FeatureMapKind, int);                                   \
  template void feature_map_forward_rows<T>(T*, T*, const T*, const T*, FeatureMapKind, int, int, int);     \
  template void feature_map_backward_rows<T>(T*, T*, const T*, const T*, const T*, FeatureMapKind, int, int, \
                                             int);                                                          \
  template void feature_map_pack_backward<T>(T*, const T*, int, int);                                       \
  template void feature_map_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*,       \
                                        FeatureMapKind, int, int);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
