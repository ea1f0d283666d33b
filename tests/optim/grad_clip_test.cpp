#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "optim/grad_clip.h"
#include "support/gradcheck.h"

using namespace rfa;

TEST_CASE("grad clip: 3-4-5 is scaled to the max norm and the pre-clip norm returned") {
  std::vector<float> g = {3.0f, 4.0f};
  CHECK(grad_clip(g.data(), 2, 1.0) == doctest::Approx(5.0));
  CHECK(g[0] == doctest::Approx(0.6));
  CHECK(g[1] == doctest::Approx(0.8));
  CHECK(grad_norm(g.data(), 2) == doctest::Approx(1.0));
}

TEST_CASE("grad clip: below the max or with max 0 leaves gradients alone") {
  std::vector<float> g = {3.0f, 4.0f};
  CHECK(grad_clip(g.data(), 2, 5.5) == doctest::Approx(5.0));
  CHECK(g[0] == 3.0f);
  CHECK(grad_clip(g.data(), 2, 0.0) == doctest::Approx(5.0));
  CHECK(g[1] == 4.0f);
}

TEST_CASE("grad clip: large vector norm matches a serial double sum") {
  const int64_t n = 1000003;
  auto g = test::random_vector<float>(n, 9);
  double sum = 0;
  for (float x : g) sum += double(x) * x;
  double norm = grad_clip(g.data(), n, 10.0);
  CHECK(norm == doctest::Approx(std::sqrt(sum)).epsilon(1e-12));
  CHECK(grad_norm(g.data(), n) == doctest::Approx(10.0).epsilon(1e-6));
  CHECK(grad_norm(g.data(), 0) == 0.0);
}

TEST_CASE("grad clip: a NaN gives a NaN norm, no scaling, and the finder names the tensor") {
  std::vector<float> g(100, 1.0f);
  g[57] = std::numeric_limits<float>::quiet_NaN();
  g[80] = std::numeric_limits<float>::infinity();
  double norm = grad_clip(g.data(), 100, 1.0);
  CHECK(std::isnan(norm));
  CHECK(g[0] == 1.0f);
  std::vector<NamedRange> ranges = {{"embed", 0, 50}, {"layers.2.attn.wq", 50, 40}, {"norm", 90, 10}};
  auto found = grad_find_non_finite(g.data(), 100, ranges);
  REQUIRE(found.has_value());
  CHECK(found->name == "layers.2.attn.wq");
  CHECK(found->index == 7);
  CHECK(std::isnan(found->value));
  g[57] = 0.0f;
  found = grad_find_non_finite(g.data(), 100, ranges);
  REQUIRE(found.has_value());
  CHECK(found->index == 30);
  CHECK(std::isinf(found->value));
  g[80] = 0.0f;
  CHECK_FALSE(grad_find_non_finite(g.data(), 100, ranges).has_value());
  g[99] = -std::numeric_limits<float>::infinity();
  found = grad_find_non_finite(g.data(), 100, {{"embed", 0, 50}});
  REQUIRE(found.has_value());
  CHECK(found->name.empty());
  CHECK(found->index == 99);
}
