#include "kernels/fast_exp.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/vector_math.h"
#include "support/gradcheck.h"

TEST_CASE("fast exp: within 3 float ulp of exp over the whole normal range") {
  double worst = 0, worst_x = 0;
  for (double x = -87.0; x <= 88.0; x += 0.000731) {
    float xf = static_cast<float>(x);
    double exact = std::exp(static_cast<double>(xf));
    double rel = std::abs(rfa::exp_approx(xf) - exact) / exact;
    if (rel > worst) worst = rel, worst_x = xf;
  }
  INFO("worst relative error ", worst, " at x = ", worst_x);
  CHECK(worst < 3 * 5.96e-8);
  CHECK(rfa::exp_approx(0.0f) == 1.0f);
  // Clamped ends stay finite and ordered.
  CHECK(std::isfinite(rfa::exp_approx(1000.0f)));
  CHECK(rfa::exp_approx(-1000.0f) >= 0.0f);
  CHECK(rfa::exp_approx(-1000.0f) < 1.3e-38f);
  CHECK(rfa::exp_of(1.0) == std::exp(1.0));
}

TEST_CASE("reduce: row sums, dots and max match plain loops") {
  for (int n : {1, 3, 16, 17, 1000}) {
    auto a = rfa::test::random_vector<double>(n, 5), b = rfa::test::random_vector<double>(n, 6);
    double sum = 0, sq = 0, dot = 0, max = a[0];
    for (int i = 0; i < n; ++i) sum += a[i], sq += a[i] * a[i], dot += a[i] * b[i], max = std::max(max, a[i]);
    INFO("n ", n);
    CHECK(rfa::row_sum(a.data(), n) == doctest::Approx(sum).epsilon(1e-12));
    CHECK(rfa::row_sum_squares(a.data(), n) == doctest::Approx(sq).epsilon(1e-12));
    CHECK(rfa::row_dot(a.data(), b.data(), n) == doctest::Approx(dot).epsilon(1e-12));
    CHECK(rfa::row_max(a.data(), n) == max);
    std::vector<float> af(a.begin(), a.end());
    CHECK(rfa::row_max(af.data(), n) == static_cast<float>(max));
  }
}

TEST_CASE("fast exp: NaN in gives NaN out") {
  CHECK(std::isnan(rfa::exp_approx(std::nanf(""))));
}
