#include "kernels/simd_exp.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

// simd_exp is exp_of lane by lane, to the bit: the blockwise softmax's forward (in registers) and
// any per-element exp_of of the same scores must agree.
TEST_CASE("simd_exp: every lane the same bits as exp_of, clamps, infinities and NaN included") {
  using V = rfa::Simd<float>::V;
  constexpr int W = rfa::Simd<float>::W;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> wide(-100.0f, 100.0f), narrow(-1.0f, 1.0f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {0.0f, -0.0f, 1.0f, -87.3f, 88.3f, -87.31f, 88.31f, 1e30f, -1e30f, inf, -inf, nan};
  int differ = 0, nan_out = 0;
  for (int round = 0; round < 20000; ++round) {
    V x;
    for (int l = 0; l < W; ++l)
      x[l] = round == 0 ? specials[l % std::size(specials)] : round % 2 ? wide(gen) : narrow(gen);
    const V y = rfa::simd_exp<float>(x);
    for (int l = 0; l < W; ++l) {
      const float e = rfa::exp_of(x[l]);
      if (std::isnan(x[l])) nan_out += std::isnan(y[l]) ? 1 : 0;
      else if (std::memcmp(&e, &y[l], sizeof(float)) != 0) ++differ;
    }
  }
  CHECK(differ == 0);
  CHECK(nan_out == (W >= 12 ? 1 : 0));  // specials[11] is NaN: it lands in a lane when W > 11
}

TEST_CASE("simd_exp: double lanes are std::exp") {
  using V = rfa::Simd<double>::V;
  V x;
  for (int l = 0; l < rfa::Simd<double>::W; ++l) x[l] = -3.0 + 0.7 * l;
  const V y = rfa::simd_exp<double>(x);
  for (int l = 0; l < rfa::Simd<double>::W; ++l) CHECK(y[l] == std::exp(x[l]));
}
