#include "layers/linear.h"

#include <doctest/doctest.h>

#include <vector>

#include "support/gradcheck.h"

using namespace rfa::test;

TEST_CASE("linear: double backward matches central differences, and adds into the gradients") {
  const int64_t N = 6;
  const int IC = 5, OC = 7;
  auto inp = random_vector<double>(N * IC, 1), weight = random_vector<double>(OC * IC, 2);
  auto R = random_vector<double>(N * OC, 3);
  std::vector<double> out(N * OC);
  auto loss = [&] {
    rfa::linear_forward(out.data(), inp.data(), weight.data(), N, IC, OC);
    return weighted_sum(out.data(), R.data(), out.size());
  };
  // Prefill the gradients: backward must add, not overwrite.
  auto dinp0 = random_vector<double>(N * IC, 4), dweight0 = random_vector<double>(OC * IC, 5);
  auto dinp = dinp0, dweight = dweight0;
  rfa::linear_backward(dinp.data(), dweight.data(), R.data(), inp.data(), weight.data(), N, IC, OC);
  for (size_t i = 0; i < dinp.size(); ++i) dinp[i] -= dinp0[i];
  for (size_t i = 0; i < dweight.size(); ++i) dweight[i] -= dweight0[i];
  GradCheckTolerance tol{.eps = 1e-6, .rtol = 1e-7, .atol = 1e-9};
  check_gradient("dinp", inp.data(), dinp.data(), inp.size(), loss, tol);
  check_gradient("dweight", weight.data(), dweight.data(), weight.size(), loss, tol);

  // dinp == nullptr still produces dweight.
  std::vector<double> dweight_only(OC * IC, 0.0);
  rfa::linear_backward<double>(nullptr, dweight_only.data(), R.data(), inp.data(), weight.data(), N, IC, OC);
  check_close("dweight without dinp", dweight_only.data(), dweight.data(), dweight.size(), 1e-12, 1e-12);
}

TEST_CASE("linear: float forward and backward match the double path") {
  const int64_t N = 70;
  const int IC = 33, OC = 65;
  auto inp = random_vector<double>(N * IC, 6), weight = random_vector<double>(OC * IC, 7, 0.2);
  auto dout = random_vector<double>(N * OC, 8);
  std::vector<float> inp_f(inp.begin(), inp.end()), weight_f(weight.begin(), weight.end()),
      dout_f(dout.begin(), dout.end());
  std::vector<double> out(N * OC), dinp(N * IC, 0.0), dweight(OC * IC, 0.0);
  std::vector<float> out_f(N * OC), dinp_f(N * IC, 0.0f), dweight_f(OC * IC, 0.0f);
  rfa::linear_forward(out.data(), inp.data(), weight.data(), N, IC, OC);
  rfa::linear_forward(out_f.data(), inp_f.data(), weight_f.data(), N, IC, OC);
  check_close("out", out_f.data(), out.data(), out.size(), 1e-4, 1e-5);
  rfa::linear_backward(dinp.data(), dweight.data(), dout.data(), inp.data(), weight.data(), N, IC, OC);
  rfa::linear_backward(dinp_f.data(), dweight_f.data(), dout_f.data(), inp_f.data(), weight_f.data(), N, IC, OC);
  check_close("dinp", dinp_f.data(), dinp.data(), dinp.size(), 1e-4, 1e-5);
  check_close("dweight", dweight_f.data(), dweight.data(), dweight.size(), 1e-4, 1e-4);
}
