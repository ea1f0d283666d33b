#include "kernels/logit_rows.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

// The reference twin in long double (64-bit significands): what token_nll's double sums approximate.
// Its earlier scalar pass (libm's exp of each double difference, summed in index order) is as far
// from it as the kernel is: 1e-15 to 4e-15 at V 8000 (the order of the sums, not the exp).
double log_sum_exp_reference(const float* x, int n, float top) {
  long double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp((long double)x[i] - (long double)top);
  return double(std::log(sum));
}
double log_sum_exp_libm_in_order(const float* x, int n, float top) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(double(x[i]) - double(top));
  return std::log(sum);
}

float max_reference(const float* x, int n) {
  float m = x[0];
  for (int i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

}  // namespace

// Rows of every length across the block edges of each target (2..8 doubles a register, twice that a
// loop step), at every float offset of a 64-byte line (batch rows start anywhere), and logits from
// narrow to spread over hundreds of nats (terms from 1 down to below e^-708).
TEST_CASE("logit rows: log-sum-exp within 1e-15 of libm's exp summed in order; max and first index exact") {
  std::mt19937 gen(11);
  std::vector<float> buffer(8192 + 16);
  int checked = 0;
  double worst = 0, libm_worst = 0;
  for (const float spread : {0.01f, 3.0f, 40.0f, 900.0f}) {
    std::normal_distribution<float> logit(0.5f, spread);
    for (int n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65, 300, 2048, 8000}) {
      for (int offset = 0; offset < 16; offset += n > 100 ? 5 : 1) {
        float* x = buffer.data() + offset;
        for (int i = 0; i < n; ++i) x[i] = logit(gen);
        const rfa::LogitsMax m = rfa::logits_max(x, n);
        INFO("n ", n, " offset ", offset, " spread ", spread);
        REQUIRE(m.finite);
        REQUIRE(m.max == max_reference(x, n));
        int32_t first = 0;
        while (x[first] != m.max) ++first;
        CHECK(rfa::logits_first_index(x, n, m.max) == first);
        const double want = log_sum_exp_reference(x, n, m.max);
        const double got = rfa::logits_log_sum_exp(x, n, m.max);
        const double err = std::fabs(got - want), libm_err = std::fabs(log_sum_exp_libm_in_order(x, n, m.max) - want);
        worst = std::max(worst, err);
        libm_worst = std::max(libm_worst, libm_err);
        CHECK(err <= 5e-15);  // log Σ of a sum >= 1: an absolute error is the sum's relative one
        ++checked;
      }
    }
  }
  CHECK(checked > 400);
  MESSAGE("largest error against long double: kernel ", worst, ", libm's exp summed in order ", libm_worst);
}

TEST_CASE("logit rows: ties, equal rows and the clamp below e^-708") {
  std::vector<float> x(100, 2.5f);  // all equal: log n, the first index 0
  CHECK(rfa::logits_log_sum_exp(x.data(), 100, 2.5f) == doctest::Approx(std::log(100.0)).epsilon(1e-15));
  CHECK(rfa::logits_first_index(x.data(), 100, 2.5f) == 0);
  x[70] = 3.0f;
  x[90] = 3.0f;  // a tie for the maximum: the first
  CHECK(rfa::logits_first_index(x.data(), 100, rfa::logits_max(x.data(), 100).max) == 70);
  std::vector<float> z(40, 0.0f);
  z[33] = -0.0f;  // -0 and +0 compare equal: the first of either
  CHECK(rfa::logits_first_index(z.data(), 40, -0.0f) == 0);
  // One term 1, the others far below e^-708: the sum is 1 (each clamped term ~3e-308 adds nothing).
  std::vector<float> far(50, -1e30f);
  far[17] = 0.0f;
  CHECK(rfa::logits_log_sum_exp(far.data(), 50, 0.0f) == 0.0);
  far.assign(50, -800.0f);  // every term at e^-800 relative to a top of 0 that is not in the row
  far[49] = 0.0f;
  CHECK(rfa::logits_log_sum_exp(far.data(), 50, 0.0f) == 0.0);
}

TEST_CASE("logit rows: a non-finite logit is found wherever it sits") {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (int n : {1, 5, 16, 17, 100}) {
    for (int at = 0; at < n; at += 1 + n / 7) {
      for (float b : bad) {
        std::vector<float> x(static_cast<size_t>(n), 1.0f);
        x[static_cast<size_t>(at)] = b;
        INFO("n ", n, " at ", at, " value ", b);
        CHECK_FALSE(rfa::logits_max(x.data(), n).finite);
        CHECK(rfa::logits_first_non_finite(x.data(), n) == at);
      }
    }
    std::vector<float> fine(static_cast<size_t>(n), -3.0e38f);
    fine[0] = 3.0e38f;  // the largest floats are finite
    CHECK(rfa::logits_max(fine.data(), n).finite);
    CHECK(rfa::logits_first_non_finite(fine.data(), n) == n);
  }
}
