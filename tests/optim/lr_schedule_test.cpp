#include <doctest/doctest.h>

#include <cmath>

#include "core/error.h"
#include "optim/lr_schedule.h"

using namespace rfa;

TEST_CASE("lr schedule: warmup, peak, cosine middle, end, past the end") {
  OptimConfig c;
  c.lr = 1e-3;
  c.lr_min = 1e-4;
  c.warmup_steps = 10;
  const int64_t total = 111;  // decay over steps 10..110 (100 intervals)
  CHECK(lr_at(c, 0, total) == doctest::Approx(1e-4));   // 1e-3 * 1/10
  CHECK(lr_at(c, 4, total) == doctest::Approx(5e-4));   // 1e-3 * 5/10
  CHECK(lr_at(c, 9, total) == doctest::Approx(1e-3));   // last warmup step reaches the peak
  CHECK(lr_at(c, 10, total) == doctest::Approx(1e-3));  // p = 0: peak
  // p = 0.25: 1e-4 + 0.9e-3 * (1 + cos(pi/4)) / 2 = 1e-4 + 0.9e-3 * 0.8535534 = 8.681981e-4
  CHECK(lr_at(c, 35, total) == doctest::Approx(8.681981e-4).epsilon(1e-6));
  CHECK(lr_at(c, 60, total) == doctest::Approx(5.5e-4));  // p = 0.5: halfway between
  CHECK(lr_at(c, 110, total) == doctest::Approx(1e-4));   // last step: lr_min
  CHECK(lr_at(c, 500, total) == doctest::Approx(1e-4));   // past the end stays at lr_min
  for (int64_t s = 11; s < total; ++s) CHECK(lr_at(c, s, total) < lr_at(c, s - 1, total));
}

TEST_CASE("lr schedule: no warmup starts at the peak; tiny runs end at lr_min") {
  OptimConfig c;
  c.lr = 2.0;
  c.lr_min = 0.0;
  c.warmup_steps = 0;
  CHECK(lr_at(c, 0, 3) == doctest::Approx(2.0));
  CHECK(lr_at(c, 1, 3) == doctest::Approx(1.0));
  CHECK(lr_at(c, 2, 3) == doctest::Approx(0.0));
  CHECK(lr_at(c, 0, 1) == doctest::Approx(0.0));  // one step: it is the last one
  c.warmup_steps = 5;
  CHECK(lr_at(c, 2, 3) == doctest::Approx(2.0 * 3 / 5));  // warmup longer than the run
}

TEST_CASE("lr schedule: invalid settings are rejected with the value") {
  OptimConfig c;
  c.lr = 1e-3;
  c.lr_min = 1e-2;
  CHECK_THROWS_WITH_AS(lr_at(c, 0, 10), doctest::Contains("optim.lr_min is 0.01"), Error);
  c.lr_min = 0;
  CHECK_THROWS_WITH_AS(lr_at(c, 0, 0), doctest::Contains("train.steps is 0"), Error);
  c.warmup_steps = -1;
  CHECK_THROWS_WITH_AS(lr_at(c, 0, 10), doctest::Contains("warmup_steps is -1"), Error);
}
