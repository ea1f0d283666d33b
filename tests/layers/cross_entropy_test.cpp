#include "layers/cross_entropy.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "support/gradcheck.h"

using namespace rfa::test;

TEST_CASE("cross entropy: uniform logits give log V; ignored targets give loss 0") {
  const int V = 10;
  std::vector<double> logits(2 * V, 0.5), probs(2 * V), losses(2);
  const int32_t targets[] = {3, -1};
  rfa::cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets, 2, V);
  CHECK(losses[0] == doctest::Approx(std::log(10.0)).epsilon(1e-14));
  CHECK(losses[1] == 0.0);
  for (double p : probs) CHECK(p == doctest::Approx(0.1).epsilon(1e-14));
}

TEST_CASE("cross entropy: double backward overwrites with central differences; ignored rows get zeros") {
  const int64_t N = 5;
  const int V = 11;
  auto logits = random_vector<double>(N * V, 1, 2.0);
  const std::vector<int32_t> targets = {4, -1, 0, 10, 4};
  auto R = random_vector<double>(N, 2);  // dlosses
  std::vector<double> losses(N), probs(N * V);
  auto loss = [&] {
    rfa::cross_entropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), N, V);
    return weighted_sum(losses.data(), R.data(), N);
  };
  loss();
  auto d = random_vector<double>(N * V, 3);  // garbage: the backward must overwrite every entry
  rfa::cross_entropy_backward(d.data(), probs.data(), targets.data(), R.data(), N, V);
  for (int v = 0; v < V; ++v) CHECK(d[1 * V + v] == 0.0);
  check_gradient("dlogits", logits.data(), d.data(), d.size(), loss, {.eps = 1e-5, .rtol = 1e-7, .atol = 1e-9});
}

TEST_CASE("cross entropy: stable for huge logits; float path matches double") {
  const int V = 4;
  const double logits[] = {1000.0, -1000.0, 999.0, 0.0};
  double probs[4], loss;
  const int32_t target = 2;
  rfa::cross_entropy_forward(&loss, probs, logits, &target, 1, V);
  // softmax over (0, -2000, -1, -1000) relative to the max
  double expect = std::log(1.0 + std::exp(-1.0)) + 1.0;
  CHECK(loss == doctest::Approx(expect).epsilon(1e-14));
  CHECK(std::isfinite(probs[1]));

  const float logits_f[] = {1000.0f, -1000.0f, 999.0f, 0.0f};
  float probs_f[4], loss_f;
  rfa::cross_entropy_forward(&loss_f, probs_f, logits_f, &target, 1, V);
  CHECK(loss_f == doctest::Approx(expect).epsilon(1e-6));

  const int64_t N = 768;
  const int Vb = 1024;
  auto big = random_vector<double>(N * Vb, 4, 3.0);
  std::vector<int32_t> targets(N);
  rfa::CounterRng rng(5);
  for (auto& t : targets) t = static_cast<int32_t>(rng.below(Vb));
  targets[7] = -1;
  std::vector<float> big_f(big.begin(), big.end());
  std::vector<double> l(N), p(N * Vb), dl(N, 1.0 / N), g(N * Vb, 0.0);
  std::vector<float> l_f(N), p_f(N * Vb), dl_f(N, 1.0f / N), g_f(N * Vb, 0.0f);
  rfa::cross_entropy_forward(l.data(), p.data(), big.data(), targets.data(), N, Vb);
  rfa::cross_entropy_forward(l_f.data(), p_f.data(), big_f.data(), targets.data(), N, Vb);
  check_close("losses", l_f.data(), l.data(), N, 1e-5, 1e-6);
  check_close("probs", p_f.data(), p.data(), p.size(), 1e-5, 1e-9);
  rfa::cross_entropy_backward(g.data(), p.data(), targets.data(), dl.data(), N, Vb);
  rfa::cross_entropy_backward(g_f.data(), p_f.data(), targets.data(), dl_f.data(), N, Vb);
  check_close("dlogits", g_f.data(), g.data(), g.size(), 1e-5, 1e-11);
}
