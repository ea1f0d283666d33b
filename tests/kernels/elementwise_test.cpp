#include "kernels/elementwise.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "support/gradcheck.h"

using rfa::test::random_vector;

TEST_CASE("elementwise: add_inplace and scale over sizes that cross chunk boundaries") {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{17}, int64_t{(1 << 15) + 5}, int64_t{300001}}) {
    auto y = random_vector<float>(n, 1), x = random_vector<float>(n, 2);
    auto expect = y;
    for (int64_t i = 0; i < n; ++i) expect[i] = (expect[i] + x[i]) * -0.25f;
    rfa::add_inplace(y.data(), x.data(), n);
    rfa::scale(y.data(), -0.25f, n);
    bool same = true;
    for (int64_t i = 0; i < n; ++i) same = same && y[i] == expect[i];
    INFO("n ", n);
    CHECK(same);
  }
}

TEST_CASE("elementwise: sum_squares accumulates in double and ignores the thread count") {
  const int64_t n = 1'000'003;
  auto x = random_vector<float>(n, 3);
  long double expect = 0;
  for (float v : x) expect += static_cast<long double>(v) * v;
  double got = rfa::sum_squares(x.data(), n);
  CHECK(std::abs(got - static_cast<double>(expect)) < 1e-9 * static_cast<double>(expect));
  int saved = rfa::thread_count();
  rfa::thread_count_set(1);
  double single = rfa::sum_squares(x.data(), n);
  rfa::thread_count_set(saved);
  CHECK(single == got);
  auto xd = random_vector<double>(5, 4);
  double expect_d = 0;
  for (double v : xd) expect_d += v * v;
  CHECK(rfa::sum_squares(xd.data(), 5) == doctest::Approx(expect_d).epsilon(1e-15));
  CHECK(rfa::sum_squares(xd.data(), 0) == 0.0);
}

TEST_CASE("elementwise: all_finite finds a single NaN or inf anywhere") {
  const int64_t n = 200'000;
  std::vector<float> x(n, 1.5f);
  CHECK(rfa::all_finite(x.data(), n));
  CHECK(rfa::all_finite(x.data(), 0));
  x[n - 1] = std::numeric_limits<float>::max();
  x[0] = std::numeric_limits<float>::denorm_min();
  CHECK(rfa::all_finite(x.data(), n));
  for (int64_t at : {int64_t{0}, int64_t{12345}, n - 1}) {
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity()}) {
      float saved = x[at];
      x[at] = bad;
      INFO("position ", at, " value ", bad);
      CHECK_FALSE(rfa::all_finite(x.data(), n));
      x[at] = saved;
    }
  }
  std::vector<double> d(1000, -2.0);
  CHECK(rfa::all_finite(d.data(), 1000));
  d[999] = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(rfa::all_finite(d.data(), 1000));
  CHECK(rfa::all_finite(d.data(), 999));
}
