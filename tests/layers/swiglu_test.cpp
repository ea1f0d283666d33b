#include "layers/swiglu.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "support/gradcheck.h"

using namespace rfa::test;

TEST_CASE("swiglu: forward is silu(gate) * up with the [gate | up] row layout") {
  const double gate_up[] = {1.0, -2.0, 3.0, 0.5};  // N 1, Hf 2: gate (1, -2), up (3, 0.5)
  double out[2];
  rfa::swiglu_forward(out, gate_up, 1, 2);
  CHECK(out[0] == doctest::Approx(1.0 / (1.0 + std::exp(-1.0)) * 3.0));
  CHECK(out[1] == doctest::Approx(-2.0 / (1.0 + std::exp(2.0)) * 0.5));
}

TEST_CASE("swiglu: double backward matches central differences, and overwrites the gradient") {
  const int64_t N = 4;
  const int Hf = 13;
  auto gate_up = random_vector<double>(N * 2 * Hf, 1, 2.0);
  auto R = random_vector<double>(N * Hf, 2);
  std::vector<double> out(N * Hf);
  auto loss = [&] {
    rfa::swiglu_forward(out.data(), gate_up.data(), N, Hf);
    return weighted_sum(out.data(), R.data(), out.size());
  };
  auto d = random_vector<double>(N * 2 * Hf, 3);  // stale values: must be overwritten, not added to
  rfa::swiglu_backward(d.data(), R.data(), gate_up.data(), N, Hf);
  check_gradient("dgate_up", gate_up.data(), d.data(), d.size(), loss, {.eps = 1e-5, .rtol = 1e-7, .atol = 1e-9});
}

TEST_CASE("swiglu: float path matches double, and stays finite for large gates") {
  const int64_t N = 768;
  const int Hf = 352;
  auto gate_up = random_vector<double>(N * 2 * Hf, 4, 3.0);
  gate_up[0] = 95.0;  // beyond exp's float range on the negative side: silu -> g
  gate_up[1] = -95.0;  // silu -> 0
  auto dout = random_vector<double>(N * Hf, 5);
  std::vector<float> gate_up_f(gate_up.begin(), gate_up.end()), dout_f(dout.begin(), dout.end());
  std::vector<double> out(N * Hf), d(N * 2 * Hf, 0.0);
  std::vector<float> out_f(N * Hf), d_f(N * 2 * Hf, 0.0f);
  rfa::swiglu_forward(out.data(), gate_up.data(), N, Hf);
  rfa::swiglu_forward(out_f.data(), gate_up_f.data(), N, Hf);
  check_close("out", out_f.data(), out.data(), out.size(), 2e-6, 1e-6);
  rfa::swiglu_backward(d.data(), dout.data(), gate_up.data(), N, Hf);
  rfa::swiglu_backward(d_f.data(), dout_f.data(), gate_up_f.data(), N, Hf);
  check_close("dgate_up", d_f.data(), d.data(), d.size(), 2e-6, 1e-6);
  CHECK(out_f[0] == doctest::Approx(95.0f * gate_up_f[Hf]));
  CHECK(std::abs(out_f[1]) < 1e-30f);
}
