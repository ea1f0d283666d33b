#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "kernels/simd.h"
#include "support/gradcheck.h"
#include "support/row_at_page_end.h"

using namespace rfa;
using rfa::test::random_vector;

TEST_CASE("simd: a register's sum and max fold its halves in a fixed order (bit for bit)") {
  // simd_sum: halves added down to 16 bytes (lane l + lane l + width/2), then those lanes from 0
  // in scalar, the order every dot and row sum of the attention kernels was made with. Lanes of
  // very different sizes make another order give other bits.
  constexpr int W = Simd<float>::W;
  for (int seed = 0; seed < 20; ++seed) {
    CAPTURE(seed);
    auto values = random_vector<double>(W, 300 + seed);
    Simd<float>::V v;
    float lanes[W];
    for (int l = 0; l < W; ++l) lanes[l] = v[l] = float(values[l] * std::pow(10.0, (l * 7 + seed) % 9 - 4));
    for (int width = W; width * int(sizeof(float)) > 16; width /= 2)
      for (int l = 0; l < width / 2; ++l) lanes[l] = lanes[l] + lanes[l + width / 2];
    float sum = 0;
    for (int l = 0; l < 16 / int(sizeof(float)); ++l) sum += lanes[l];
    CHECK(simd_sum<float>(v) == sum);
    float largest = v[0];
    for (int l = 1; l < W; ++l) largest = std::max(largest, float(v[l]));
    CHECK(simd_max<float>(v) == largest);
  }
}

TEST_CASE_TEMPLATE("simd: the first lanes of a register, loaded and stored, nothing past them touched", T, float,
                   double) {
  constexpr int W = Simd<T>::W;
  for (int count = 0; count < W; ++count) {  // every partial length
    INFO("count ", count);
    test::RowAtPageEnd<T> p(count);
    for (int i = 0; i < count; ++i) p.row[i] = T(i + 2);
    const typename Simd<T>::V v = simd_load_first(p.row, count);
    for (int l = 0; l < W; ++l) CHECK(v[l] == (l < count ? T(l + 2) : T(0)));
    simd_store_first(p.row, v * T(2), count);
    for (int i = 0; i < count; ++i) CHECK(p.row[i] == T(2 * (i + 2)));
  }
}
