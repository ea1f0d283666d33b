#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attention/feature_map.h"
#include "attention/random_features.h"
#include "kernels/vector_math.h"  // dot
#include "support/gradcheck.h"

using namespace rfa;
using rfa::test::random_vector;

namespace {

// Rows x (N, Dh) -> phi (N, F) through normalisation and the feature map.
void phi_rows(std::vector<double>& phi, const std::vector<double>& x, const std::vector<double>& sigma,
              const std::vector<double>& W, FeatureMapKind kind, int N, int D, int Dh, double eps_n) {
  const int F = feature_count(kind, D);
  std::vector<double> xbar(Dh), u(D + Dh), Wt(feature_map_packed_size(D, Dh));
  feature_map_pack_forward(Wt.data(), W.data(), D, Dh);
  for (int i = 0; i < N; ++i) {
    l2_normalize_forward(xbar.data(), x.data() + size_t(i) * Dh, Dh, eps_n);
    feature_map_forward(phi.data() + size_t(i) * F, u.data(), xbar.data(), sigma.data(), Wt.data(), kind, D, Dh);
  }
}

}  // namespace

TEST_CASE("feature map: normalisation, phi and sigma gradients match central differences") {
  for (FeatureMapKind kind : {FeatureMapKind::gaussian, FeatureMapKind::arccos}) {
    CAPTURE(int(kind));
    const int N = 5, D = 6, Dh = 4, F = feature_count(kind, D);
    const double eps_n = 1e-6;
    auto x = random_vector<double>(size_t(N) * Dh, 31);
    auto sigma = random_vector<double>(Dh, 32, 0.3);
    for (auto& s : sigma) s += 1.0;
    std::vector<double> W(size_t(D) * Dh);
    random_features_draw(W.data(), 7, 0, 0, 1, D, Dh, false);
    auto R = random_vector<double>(size_t(N) * F, 33);
    std::vector<double> phi(size_t(N) * F);
    auto loss = [&] {
      phi_rows(phi, x, sigma, W, kind, N, D, Dh, eps_n);
      return rfa::test::weighted_sum(phi.data(), R.data(), phi.size());
    };
    loss();
    std::vector<double> dx(x.size(), 0.0), dsigma(Dh, 0.0), xbar(Dh), dxbar(Dh), du(D + Dh);
    std::vector<double> Wp(feature_map_packed_size(D, Dh));
    feature_map_pack_backward(Wp.data(), W.data(), D, Dh);
    for (int i = 0; i < N; ++i) {
      double r = l2_normalize_forward(xbar.data(), x.data() + size_t(i) * Dh, Dh, eps_n);
      std::fill(dxbar.begin(), dxbar.end(), 0.0);
      feature_map_backward(dxbar.data(), dsigma.data(), du.data(), R.data() + size_t(i) * F,
                           phi.data() + size_t(i) * F, xbar.data(), sigma.data(), Wp.data(), kind, D, Dh);
      l2_normalize_backward(dx.data() + size_t(i) * Dh, dxbar.data(), xbar.data(), r, Dh);
    }
    rfa::test::GradCheckTolerance tol{1e-6, 1e-6, 1e-9};
    rfa::test::check_gradient("x", x.data(), dx.data(), x.size(), loss, tol);
    rfa::test::check_gradient("sigma", sigma.data(), dsigma.data(), sigma.size(), loss, tol);
  }
}

TEST_CASE("feature map: gaussian features have unit norm and estimate the Gaussian kernel") {
  const int D = 4096, Dh = 8, F = 2 * D;
  std::vector<float> W(size_t(D) * Dh), sigma(Dh, 1.0f), u(D + Dh), phi_x(F), phi_y(F), xbar(Dh), ybar(Dh);
  random_features_draw(W.data(), 3, 0, 0, 1, D, Dh, false);
  std::vector<float> Wt(feature_map_packed_size(D, Dh));
  feature_map_pack_forward(Wt.data(), W.data(), D, Dh);
  auto x = random_vector<float>(Dh, 41), y = random_vector<float>(Dh, 42);
  l2_normalize_forward(xbar.data(), x.data(), Dh, 1e-6f);
  l2_normalize_forward(ybar.data(), y.data(), Dh, 1e-6f);
  feature_map_forward(phi_x.data(), u.data(), xbar.data(), sigma.data(), Wt.data(), FeatureMapKind::gaussian, D, Dh);
  feature_map_forward(phi_y.data(), u.data(), ybar.data(), sigma.data(), Wt.data(), FeatureMapKind::gaussian, D, Dh);
  double norm = 0, kernel = 0, dist = 0;
  for (int f = 0; f < F; ++f) norm += double(phi_x[f]) * phi_x[f], kernel += double(phi_x[f]) * phi_y[f];
  for (int j = 0; j < Dh; ++j) dist += double(xbar[j] - ybar[j]) * (xbar[j] - ybar[j]);
  CHECK(norm == doctest::Approx(1.0).epsilon(1e-5));
  CHECK(kernel == doctest::Approx(std::exp(-dist / 2)).epsilon(0.05));  // D = 4096: std ~ 1/sqrt(2D)
}

TEST_CASE("random features: a draw is a pure function of (seed, step, layer, head)") {
  const int H = 3, D = 40, Dh = 16;
  std::vector<float> a(size_t(H) * D * Dh), b(a.size()), c(a.size()), one_head(size_t(D) * Dh);
  random_features_draw(a.data(), 9, 5, 2, H, D, Dh, false);
  random_features_draw(b.data(), 9, 5, 2, H, D, Dh, false);
  random_features_draw(c.data(), 9, 6, 2, H, D, Dh, false);
  CHECK(a == b);
  CHECK(a != c);
  // Head h of a draw is the same whatever H is: it reads only its own key.
  std::vector<float> more(size_t(H + 2) * D * Dh);
  random_features_draw(more.data(), 9, 5, 2, H + 2, D, Dh, false);
  CHECK(std::equal(a.begin(), a.end(), more.begin()));
  double sum = 0, sum_sq = 0;
  for (float x : a) sum += x, sum_sq += double(x) * x;
  CHECK(std::abs(sum / a.size()) < 0.05);
  CHECK(std::abs(sum_sq / a.size() - 1.0) < 0.08);
}

TEST_CASE("random features: orthogonal blocks have orthogonal rows with chi norms") {
  const int D = 40, Dh = 16;  // blocks of 16, 16, 8 rows
  std::vector<double> W(size_t(D) * Dh);
  random_features_draw(W.data(), 4, 0, 1, 1, D, Dh, true);
  double mean_norm_sq = 0;
  for (int i = 0; i < D; ++i) {
    const double* ri = W.data() + size_t(i) * Dh;
    double ni = std::sqrt(rfa::dot(ri, ri, Dh));
    mean_norm_sq += ni * ni / D;
    for (int j = i / Dh * Dh; j < i; ++j) {  // earlier rows of the same block
      const double* rj = W.data() + size_t(j) * Dh;
      double nj = std::sqrt(rfa::dot(rj, rj, Dh));
      CHECK(std::abs(rfa::dot(ri, rj, Dh)) / (ni * nj) < 1e-10);
    }
  }
  CHECK(mean_norm_sq == doctest::Approx(Dh).epsilon(0.35));  // E|row|² = Dh
}
