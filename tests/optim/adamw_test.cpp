#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "optim/adamw.h"
#include "support/gradcheck.h"

using namespace rfa;

namespace {

AdamWStep hyper(int64_t t) {
  AdamWStep s;
  s.lr = 0.1;
  s.beta1 = 0.9;
  s.beta2 = 0.95;
  s.eps = 1e-8;
  s.weight_decay = 0.1;
  s.t = t;
  return s;
}

}  // namespace

TEST_CASE("adamw: three steps match hand-computed values, decay only where masked") {
  // Elements 0, 1 are a "weight matrix" (decayed); 2, 3 a "norm" (not decayed).
  DecayMask mask = decay_mask_build({{2, 2, false}, {0, 2, true}}, 4);
  std::vector<float> p = {1.0f, -2.0f, 0.5f, 3.0f}, m(4, 0.0f), v(4, 0.0f);
  const std::vector<std::vector<float>> grads = {
      {0.5f, -1.0f, 0.25f, 2.0f}, {0.1f, 0.3f, -0.2f, 0.0f}, {-0.4f, 0.2f, 1.5f, -1.0f}};
  // Step 1: bias correction makes the Adam step exactly lr * sign(g) (up to eps):
  //   p0 = 1 * (1 - 0.1 * 0.1) - 0.1 = 0.89      p1 = -2 * 0.99 + 0.1 = -1.88
  //   p2 = 0.5 - 0.1 = 0.4 (no decay)            p3 = 3 - 0.1 = 2.9 (no decay)
  // Step 2, element 0: p = 0.89 * 0.99 = 0.8811; m = 0.9*0.05 + 0.1*0.1 = 0.055;
  //   v = 0.95*0.0125 + 0.05*0.01 = 0.012375; m_hat = 0.055/0.19; v_hat = 0.012375/0.0975;
  //   p = 0.8811 - 0.1 * m_hat / sqrt(v_hat) = 0.79984712.
  // The rest are the same formula evaluated in double precision.
  const std::vector<std::vector<double>> expect_p = {
      {0.890000002, -1.880000001, 0.4000000039999998, 2.9000000005},
      {0.7998471188087057, -1.8179587470422238, 0.3941713923055294, 2.8321352263050716},
      {0.7824297543692538, -1.7788801411808564, 0.33220097838799123, 2.814138862706954}};
  const std::vector<std::vector<double>> expect_m = {
      {0.05, -0.1, 0.025, 0.2}, {0.055, -0.06, 0.0025, 0.18}, {0.0095, -0.034, 0.15225, 0.062}};
  const std::vector<std::vector<double>> expect_v = {{0.0125, 0.05, 0.003125, 0.2},
                                                     {0.012375, 0.052, 0.00496875, 0.19},
                                                     {0.01975625, 0.0514, 0.1172203125, 0.2305}};
  for (int step = 0; step < 3; ++step) {
    adamw_update(hyper(step + 1), mask, p.data(), grads[step].data(), m.data(), v.data(), 4);
    for (int i = 0; i < 4; ++i) {
      CAPTURE(step);
      CAPTURE(i);
      CHECK(p[i] == doctest::Approx(expect_p[step][i]).epsilon(1e-6));
      CHECK(m[i] == doctest::Approx(expect_m[step][i]).epsilon(1e-6));
      CHECK(v[i] == doctest::Approx(expect_v[step][i]).epsilon(1e-6));
    }
  }
}

TEST_CASE("adamw: zero gradient moves only decayed parameters, by lr * wd * p") {
  DecayMask mask = decay_mask_build({{0, 1, true}, {1, 1, false}}, 2);
  std::vector<float> p = {2.0f, 2.0f}, g = {0.0f, 0.0f}, m(2, 0.0f), v(2, 0.0f);
  adamw_update(hyper(1), mask, p.data(), g.data(), m.data(), v.data(), 2);
  CHECK(p[0] == doctest::Approx(2.0 * (1 - 0.1 * 0.1)).epsilon(1e-7));
  CHECK(p[1] == 2.0f);
}

TEST_CASE("adamw: parallel kernel matches the double reference across blocks and ranges") {
  const int64_t n = 100003;  // several 16K blocks, ragged end
  DecayMask mask = decay_mask_build(
      {{0, 5000, true}, {5000, 17, false}, {5017, 40000, true}, {45017, 3, false}, {45020, n - 45020, true}}, n);
  auto p = test::random_vector<float>(n, 1), g = test::random_vector<float>(n, 2, 0.1);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  auto p_ref = p, m_ref = m, v_ref = v;
  for (int64_t t = 1; t <= 3; ++t) {
    adamw_update(hyper(t), mask, p.data(), g.data(), m.data(), v.data(), n);
    adamw_update_reference(hyper(t), mask, p_ref.data(), g.data(), m_ref.data(), v_ref.data(), n);
  }
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(double(p[i]) - p_ref[i]));
  CHECK(worst < 1e-5);
  CHECK(mask.ranges.size() == 5);  // alternating flags: nothing merged

  // Against a run with no decay anywhere: equal exactly where the mask says no decay.
  DecayMask none = decay_mask_build({{0, n, false}}, n);
  auto p_none = test::random_vector<float>(n, 1);
  std::vector<float> m_none(n, 0.0f), v_none(n, 0.0f);
  for (int64_t t = 1; t <= 3; ++t) adamw_update(hyper(t), none, p_none.data(), g.data(), m_none.data(), v_none.data(), n);
  int64_t equal_decayed = 0, differ_plain = 0;
  for (const DecayRange& r : mask.ranges) {
    for (int64_t i = r.offset; i < r.offset + r.count; ++i) {
      if (r.decay && p[i] == p_none[i] && p[i] != 0.0f) ++equal_decayed;
      if (!r.decay && p[i] != p_none[i]) ++differ_plain;
    }
  }
  CHECK(differ_plain == 0);
  CHECK(equal_decayed < n / 1000);  // decay of 1e-2 * |p| almost always changes the float
}

TEST_CASE("adamw: decay mask rejects gaps, overlaps and wrong totals and merges neighbours") {
  CHECK_THROWS_WITH_AS(decay_mask_build({{0, 4, true}, {5, 5, false}}, 10),
                       doctest::Contains("parameters [4, 5) are not covered"), Error);
  CHECK_THROWS_WITH_AS(decay_mask_build({{0, 6, true}, {5, 5, false}}, 10),
                       doctest::Contains("overlaps"), Error);
  CHECK_THROWS_WITH_AS(decay_mask_build({{0, 6, true}}, 10),
                       doctest::Contains("cover [0, 6) but there are 10"), Error);
  DecayMask mask = decay_mask_build({{4, 6, true}, {0, 4, true}, {10, 0, false}}, 10);
  REQUIRE(mask.ranges.size() == 1);
  CHECK(mask.ranges[0].count == 10);
}

TEST_CASE("adamw: step from config carries the hyper-parameters") {
  OptimConfig c;
  c.beta1 = 0.8;
  c.weight_decay = 0.3;
  AdamWStep s = adamw_step_make(c, 0.5, 7);
  CHECK(s.lr == 0.5);
  CHECK(s.beta1 == 0.8);
  CHECK(s.beta2 == c.beta2);
  CHECK(s.weight_decay == 0.3);
  CHECK(s.t == 7);
}

TEST_CASE("adamw: the vector body and the scalar tail give the same bits for the same inputs") {
  // 16-wide body [0, 32), tail [32, 37): tail element 32 + j repeats body element 5 * j + 3.
  const int64_t n = 37;
  DecayMask mask = decay_mask_build({{0, n, true}}, n);
  std::vector<float> p(n), g(n), m(n), v(n);
  for (int64_t i = 0; i < 32; ++i) {
    p[i] = 0.3f + 0.011f * float(i);
    g[i] = std::sin(1.7f * float(i)) * 0.37f;
    m[i] = 0.01f * std::cos(float(i));
    v[i] = 1e-4f * float(i % 7 + 1);
  }
  for (int64_t j = 0; j < 5; ++j) {
    const int64_t s = 5 * j + 3;
    p[32 + j] = p[s], g[32 + j] = g[s], m[32 + j] = m[s], v[32 + j] = v[s];
  }
  adamw_update(hyper(3), mask, p.data(), g.data(), m.data(), v.data(), n);
  for (int64_t j = 0; j < 5; ++j) {
    const int64_t s = 5 * j + 3;
    CHECK(p[32 + j] == p[s]);
    CHECK(m[32 + j] == m[s]);
    CHECK(v[32 + j] == v[s]);
  }
}

TEST_CASE("adamw: a range's learning-rate factor scales its update alone; factor 1 changes no bit") {
  const int64_t n = 40000;  // ranges across a 16K block boundary
  auto g = test::random_vector<float>(n, 2, 0.1);
  auto run = [&](double scale) {
    DecayMask mask = decay_mask_build({{0, 20000, true}, {20000, 300, false, scale}, {20300, n - 20300, true}}, n);
    auto p = test::random_vector<float>(n, 1);
    std::vector<float> m(n, 0.0f), v(n, 0.0f), p_ref = p, m_ref = m, v_ref = v;
    for (int64_t t = 1; t <= 3; ++t) {
      adamw_update(hyper(t), mask, p.data(), g.data(), m.data(), v.data(), n);
      adamw_update_reference(hyper(t), mask, p_ref.data(), g.data(), m_ref.data(), v_ref.data(), n);
    }
    for (int64_t i = 0; i < n; ++i) REQUIRE(std::abs(double(p[i]) - p_ref[i]) < 1e-5);
    return std::pair{p, mask.ranges.size()};
  };
  const auto [one, ranges_one] = run(1.0);
  const auto [ten, ranges_ten] = run(10.0);
  CHECK(ranges_one == 3);  // decay flags alternate
  CHECK(ranges_ten == 3);
  const auto p0 = test::random_vector<float>(n, 1);
  for (int64_t i = 0; i < n; ++i) {
    if (i < 20000 || i >= 20300) {
      REQUIRE(one[i] == ten[i]);  // the other ranges: the same bits
    } else {  // three Adam steps of about lr each (bias-corrected): 10x as far
      const double d1 = std::abs(double(one[i]) - p0[i]), d10 = std::abs(double(ten[i]) - p0[i]);
      REQUIRE(d10 == doctest::Approx(10 * d1).epsilon(1e-3));
    }
  }
  // Neighbours with equal flags but another factor stay apart; a factor <= 0 is refused.
  CHECK(decay_mask_build({{0, 4, false}, {4, 4, false, 3.0}}, 8).ranges.size() == 2);
  CHECK_THROWS_WITH_AS(decay_mask_build({{0, 4, false, 0.0}}, 4), doctest::Contains("learning-rate factor"), Error);
}
