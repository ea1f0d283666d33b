#pragma once
// Row kernels of the attention cores, written so -O3 -march=native vectorises
// them without -ffast-math: dot (explicit lane accumulators, since the compiler
// may not reorder a plain float sum), axpy, exp and sin/cos rows.
// double versions (gradient checks) call libm.
#include <bit>
#include <cmath>
#include <cstdint>

namespace rfa {

// sum_j a[j] b[j] with 64 bytes of independent lane accumulators, summed as a
// tree (each level is element-wise, so it vectorises too).
template <typename T>
inline T dot(const T* a, const T* b, int n) {
  constexpr int lanes = 64 / sizeof(T);
  T acc[lanes] = {};
  int j = 0;
  for (; j + lanes <= n; j += lanes)
    for (int l = 0; l < lanes; ++l) acc[l] += a[j + l] * b[j + l];
  for (int width = lanes / 2; width > 0; width /= 2)
    for (int l = 0; l < width; ++l) acc[l] += acc[l + width];
  T s = acc[0];
  for (; j < n; ++j) s += a[j] * b[j];
  return s;
}

// Nearest integer, as a float-to-int conversion the vectoriser accepts (std::floor
// and std::nearbyint are not vectorised without -ffast-math).
inline int round_to_int(float x) { return static_cast<int>(x + (x >= 0.0f ? 0.5f : -0.5f)); }

// y += alpha x
template <typename T>
inline void axpy(T* y, T alpha, const T* x, int n) {
  for (int j = 0; j < n; ++j) y[j] += alpha * x[j];
}

// y = exp(x) in place. float: Cephes expf reduction and polynomial with the
// exponent added in the bits; relative error ~2e-7; inputs below -87 give ~0.
inline void exp_row(float* x, int n) {
  for (int i = 0; i < n; ++i) {
    float v = x[i];
    v = v < -87.0f ? -87.0f : v;
    v = v > 88.0f ? 88.0f : v;
    const int mi = round_to_int(v * 1.44269504088896341f);
    const float m = static_cast<float>(mi);
    float r = (v - m * 0.693359375f) - m * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    int32_t bits = std::bit_cast<int32_t>(y) + (mi << 23);
    x[i] = std::bit_cast<float>(bits);
  }
}

inline void exp_row(double* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

// s = sin(u), c = cos(u). Vectorised (libm's
// scalar sinf/cosf would dominate the feature map's cost). float: Cody-Waite
// reduction by pi/2 in three parts plus the Cephes minimax polynomials on
// [-pi/4, pi/4]; absolute error ~1e-7 for |u| < 1e3, ~1e-5 up to 1e5, the range
// the feature map sees (|u| ~ |sigma| since |x̄| = 1 and W rows are Gaussian).
// double (gradient checks): plain libm.
inline void sincos_row(float* s, float* c, const float* u, int n) {
  for (int i = 0; i < n; ++i) {
    float x = u[i];
    const int ji = round_to_int(x * 0.636619772367581343f);  // nearest multiple of pi/2
    const float j = static_cast<float>(ji);
    const int quadrant = ji & 3;
    float r = ((x - j * 1.5703125f) - j * 4.837512969970703125e-4f) - j * 7.54978995489188216e-8f;
    float r2 = r * r;
    float sin_r = r + r * r2 * (-1.6666654611e-1f + r2 * (8.3321608736e-3f + r2 * -1.9515295891e-4f));
    float cos_r = 1.0f - 0.5f * r2 +
                  r2 * r2 * (4.166664568298827e-2f + r2 * (-1.388731625493765e-3f + r2 * 2.443315711809948e-5f));
    float sin_x = (quadrant & 1) ? cos_r : sin_r;
    float cos_x = (quadrant & 1) ? sin_r : cos_r;
    s[i] = (quadrant & 2) ? -sin_x : sin_x;
    c[i] = ((quadrant + 1) & 2) ? -cos_x : cos_x;
  }
}

inline void sincos_row(double* s, double* c, const double* u, int n) {
  for (int i = 0; i < n; ++i) {
    s[i] = std::sin(u[i]);
    c[i] = std::cos(u[i]);
  }
}

}  // namespace rfa
