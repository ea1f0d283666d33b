#pragma once
// Finite-difference gradient checking and tensor comparison for tests.
//
// Pattern: run the double-precision forward, take the loss L = sum(out * R) for
// a fixed random R (so dL/dout = R), run the backward with dout = R, then
// compare every analytic gradient with central differences of L:
//   (L(x + eps) - L(x - eps)) / (2 eps)
// and, where that misses the tolerance, the five-point (8 (L(x+e) - L(x-e)) - (L(x+2e) - L(x-2e))) / (12 e),
// whose truncation error is O(eps⁴): a deep double-precision model's loss bends enough that the
// central difference's eps² term alone can exceed rtol at an eps still above the round-off.
// Each op picks its eps and tolerance (ggml's habit).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/rng.h"

namespace rfa::test {

struct GradCheckTolerance {
  double eps = 1e-5;     // finite-difference step
  double rtol = 1e-6;    // relative to max(|numeric|, |analytic|)
  double atol = 1e-9;
  size_t max_entries = 0;  // 0 = check every entry; else a deterministic sample
};

template <typename T>
std::vector<T> random_vector(size_t n, uint64_t seed, double scale = 1.0) {
  CounterRng rng(seed, 0xfeed);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(rng.normal() * scale);
  return v;
}

// sum(out * weights): the scalar loss the checks differentiate.
template <typename T>
double weighted_sum(const T* out, const T* weights, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<double>(out[i]) * static_cast<double>(weights[i]);
  return s;
}

// Compares analytic[i] with the central difference of loss() in x[i].
// loss() must recompute the forward from the current contents of x.
inline void check_gradient(const std::string& name, double* x, const double* analytic, size_t n,
                           const std::function<double()>& loss, GradCheckTolerance tol = {}) {
  size_t stride = (tol.max_entries == 0 || n <= tol.max_entries) ? 1 : n / tol.max_entries;
  double worst = 0;
  size_t worst_index = 0;
  double worst_numeric = 0, worst_analytic = 0;
  for (size_t i = 0; i < n; i += stride) {
    double saved = x[i];
    x[i] = saved + tol.eps;
    double plus = loss();
    x[i] = saved - tol.eps;
    double minus = loss();
    x[i] = saved;
    double numeric = (plus - minus) / (2 * tol.eps);
    double err = std::abs(numeric - analytic[i]);
    double allowed = tol.atol + tol.rtol * std::max(std::abs(numeric), std::abs(analytic[i]));
    double ratio = err / allowed;
    if (ratio > 1.0) {  // inconclusive: the five-point stencil cancels the eps² term of the truncation error
      x[i] = saved + 2 * tol.eps;
      const double plus2 = loss();
      x[i] = saved - 2 * tol.eps;
      const double minus2 = loss();
      x[i] = saved;
      numeric = (8 * (plus - minus) - (plus2 - minus2)) / (12 * tol.eps);
      err = std::abs(numeric - analytic[i]);
      allowed = tol.atol + tol.rtol * std::max(std::abs(numeric), std::abs(analytic[i]));
      ratio = err / allowed;
    }
    if (ratio > worst) {
      worst = ratio;
      worst_index = i;
      worst_numeric = numeric;
      worst_analytic = analytic[i];
    }
  }
  INFO("gradient of ", name, ": worst entry ", worst_index, " numeric ", worst_numeric, " analytic ",
       worst_analytic, " (error/allowed = ", worst, ")");
  CHECK(worst <= 1.0);
}

// Element-wise |a - b| <= atol + rtol * |b|; reports the worst entry.
template <typename A, typename B>
void check_close(const std::string& name, const A* a, const B* b, size_t n, double rtol, double atol) {
  double worst = 0;
  size_t worst_index = 0;
  for (size_t i = 0; i < n; ++i) {
    double err = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    double allowed = atol + rtol * std::abs(static_cast<double>(b[i]));
    double ratio = std::isfinite(err) ? err / allowed : INFINITY;
    if (ratio > worst) {
      worst = ratio;
      worst_index = i;
    }
  }
  INFO(name, ": worst entry ", worst_index, " got ", (n ? static_cast<double>(a[worst_index]) : 0.0),
       " expected ", (n ? static_cast<double>(b[worst_index]) : 0.0), " (error/allowed = ", worst, ")");
  CHECK(worst <= 1.0);
}

}  // namespace rfa::test
