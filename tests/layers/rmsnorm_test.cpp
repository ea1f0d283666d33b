#include "layers/rmsnorm.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "support/gradcheck.h"

using namespace rfa::test;

TEST_CASE("rmsnorm: forward normalises each row to unit rms times the weight") {
  const int64_t N = 3;
  const int C = 20;
  auto inp = random_vector<double>(N * C, 1, 3.0);
  std::vector<double> weight(C, 1.0), out(N * C), rstd(N);
  rfa::rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), N, C, 0.0);
  for (int64_t n = 0; n < N; ++n) {
    double ms = 0, ms_in = 0;
    for (int c = 0; c < C; ++c) ms += out[n * C + c] * out[n * C + c], ms_in += inp[n * C + c] * inp[n * C + c];
    CHECK(ms / C == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(rstd[n] == doctest::Approx(1.0 / std::sqrt(ms_in / C)).epsilon(1e-12));
  }
}

TEST_CASE("rmsnorm: double backward matches central differences, and adds into the gradients") {
  const int64_t N = 5;
  const int C = 83;  // odd: one full 64-wide column block and a 19-wide tail
  const double eps = 1e-5;
  auto inp = random_vector<double>(N * C, 2);
  auto weight = random_vector<double>(C, 3);
  auto R = random_vector<double>(N * C, 4);
  std::vector<double> out(N * C), rstd(N);
  auto loss = [&] {
    rfa::rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), N, C, eps);
    return weighted_sum(out.data(), R.data(), out.size());
  };
  loss();
  auto dinp0 = random_vector<double>(N * C, 5), dweight0 = random_vector<double>(C, 6);
  auto dinp = dinp0, dweight = dweight0;
  rfa::rmsnorm_backward(dinp.data(), dweight.data(), R.data(), inp.data(), weight.data(), rstd.data(), N, C);
  for (size_t i = 0; i < dinp.size(); ++i) dinp[i] -= dinp0[i];
  for (size_t i = 0; i < dweight.size(); ++i) dweight[i] -= dweight0[i];
  GradCheckTolerance tol{.eps = 1e-5, .rtol = 1e-6, .atol = 1e-8};
  check_gradient("dinp", inp.data(), dinp.data(), inp.size(), loss, tol);
  check_gradient("dweight", weight.data(), dweight.data(), weight.size(), loss, tol);
}

TEST_CASE("rmsnorm: float forward and backward match the double path") {
  const int64_t N = 768;
  const int C = 128;
  auto inp = random_vector<double>(N * C, 7), weight = random_vector<double>(C, 8);
  auto dout = random_vector<double>(N * C, 9);
  std::vector<float> inp_f(inp.begin(), inp.end()), weight_f(weight.begin(), weight.end()),
      dout_f(dout.begin(), dout.end());
  std::vector<double> out(N * C), rstd(N), dinp(N * C, 0.0), dweight(C, 0.0);
  std::vector<float> out_f(N * C), rstd_f(N), dinp_f(N * C, 0.0f), dweight_f(C, 0.0f);
  rfa::rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), N, C, 1e-5);
  rfa::rmsnorm_forward(out_f.data(), rstd_f.data(), inp_f.data(), weight_f.data(), N, C, 1e-5);
  check_close("out", out_f.data(), out.data(), out.size(), 1e-5, 1e-6);
  check_close("rstd", rstd_f.data(), rstd.data(), rstd.size(), 1e-5, 0);
  rfa::rmsnorm_backward(dinp.data(), dweight.data(), dout.data(), inp.data(), weight.data(), rstd.data(), N, C);
  rfa::rmsnorm_backward(dinp_f.data(), dweight_f.data(), dout_f.data(), inp_f.data(), weight_f.data(),
                        rstd_f.data(), N, C);
  check_close("dinp", dinp_f.data(), dinp.data(), dinp.size(), 1e-4, 1e-5);
  check_close("dweight", dweight_f.data(), dweight.data(), dweight.size(), 1e-4, 1e-4);
}

TEST_CASE("rmsnorm: backward gives bit-identical gradients for 1 and 2 threads") {
  const int64_t N = 300;
  const int C = 96;  // a full 64-wide block and a 32-wide tail
  auto inp = random_vector<float>(N * C, 10), weight = random_vector<float>(C, 11);
  auto dout = random_vector<float>(N * C, 12);
  std::vector<float> out(N * C), rstd(N);
  rfa::rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), N, C, 1e-5);
  auto run = [&](int threads) {
    std::vector<float> grads(N * C + C, 0.0f);  // [dinp | dweight]
    int saved = rfa::thread_count();
    rfa::thread_count_set(threads);
    rfa::rmsnorm_backward(grads.data(), grads.data() + N * C, dout.data(), inp.data(), weight.data(), rstd.data(),
                          N, C);
    rfa::thread_count_set(saved);
    return grads;
  };
  CHECK(run(1) == run(2));
}

TEST_CASE("rmsnorm: residual_rmsnorm_forward equals the add then rmsnorm_forward, bit for bit") {
  const int64_t N = 37;
  const int C = 83;
  auto x = random_vector<float>(N * C, 13), residual = random_vector<float>(N * C, 14);
  auto weight = random_vector<float>(C, 15);
  std::vector<float> sum(N * C), out(N * C), rstd(N), fused = x, out_f(N * C), rstd_f(N);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = x[i] + residual[i];
  rfa::rmsnorm_forward(out.data(), rstd.data(), sum.data(), weight.data(), N, C, 1e-5);
  rfa::residual_rmsnorm_forward(out_f.data(), rstd_f.data(), fused.data(), residual.data(), weight.data(), N, C,
                                1e-5);
  CHECK(fused == sum);  // the input becomes the residual stream's sum
  CHECK(out_f == out);
  CHECK(rstd_f == rstd);
}

TEST_CASE("rmsnorm: backward with GradWrite::overwrite writes dinp whatever it held, and adds into dweight") {
  const int64_t N = 41;
  const int C = 83;
  auto inp = random_vector<float>(N * C, 16), weight = random_vector<float>(C, 17);
  auto dout = random_vector<float>(N * C, 18);
  std::vector<float> out(N * C), rstd(N);
  rfa::rmsnorm_forward(out.data(), rstd.data(), inp.data(), weight.data(), N, C, 1e-5);
  std::vector<float> dinp(N * C, 0.0f), dweight(C, 0.5f);
  rfa::rmsnorm_backward(dinp.data(), dweight.data(), dout.data(), inp.data(), weight.data(), rstd.data(), N, C);
  auto dinp_o = random_vector<float>(N * C, 19);  // garbage to be overwritten
  std::vector<float> dweight_o(C, 0.5f);
  rfa::rmsnorm_backward(dinp_o.data(), dweight_o.data(), dout.data(), inp.data(), weight.data(), rstd.data(), N,
                        C, rfa::GradWrite::overwrite);
  CHECK(dinp_o == dinp);
  CHECK(dweight_o == dweight);
}
