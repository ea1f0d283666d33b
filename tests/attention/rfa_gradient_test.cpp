// Every RFA gradient against central differences of the double forward:
// inputs q, k, v, n, parameters sigma, gate_w, gate_b, for RFA and RFA-Gate with
// both feature maps, several chunks (the last partial) and an entering state.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "attention/rfa_gradcheck.h"
#include "attention/rfa_test_case.h"

using namespace rfa;
using rfa::test::RfaProblem;

const rfa::test::GradCheckTolerance kTol{1e-6, 2e-6, 1e-8, 80};  // step 1e-6, 80 entries per tensor

TEST_CASE("rfa: gradients match central differences (both kinds, both feature maps, with entering state)") {
  for (bool gated : {true, false})
    for (FeatureMapKind kind : {FeatureMapKind::gaussian, FeatureMapKind::arccos})
      for (bool with_state : {false, true}) {
        CAPTURE(gated);
        CAPTURE(int(kind));
        CAPTURE(with_state);
        RfaConfig cfg;
        cfg.gated = gated, cfg.feature_map = kind, cfg.num_features = 5, cfg.chunk_size = 4;
        cfg.eps_d = 0.02;  // keeps out = num/den moderate so rounding does not swamp the differences
        AttentionDims d{2, 13, 2, 4};  // chunks of 4, 4, 4, 1
        RfaProblem<double> p(cfg, d, 300);
        std::vector<double> state;
        if (with_state) {  // a realistic entering state: the state after an earlier random segment
          RfaProblem<double> before(cfg, d, 400);
          state.resize(size_t(d.B) * d.H * rfa_feature_count(cfg) * (d.Dh + 1));
          before.forward(nullptr, state.data());
        }
        rfa::test::rfa_check_gradients(p, with_state ? &state : nullptr, kTol);
      }
}

TEST_CASE("rfa: the denominator floor passes no gradient where it is active") {
  // A floor high enough that some tokens sit on it and others do not; the
  // gradient check only passes if dden = 0 (and dnum = dh/eps_d) on the floor.
  for (FeatureMapKind kind : {FeatureMapKind::gaussian, FeatureMapKind::arccos}) {
    CAPTURE(int(kind));
    RfaConfig cfg;
    cfg.gated = true, cfg.feature_map = kind, cfg.num_features = 5, cfg.chunk_size = 4;
    cfg.eps_d = kind == FeatureMapKind::gaussian ? 0.3 : 0.15;
    AttentionDims d{2, 13, 2, 4};
    RfaProblem<double> p(cfg, d, 500);
    rfa::test::rfa_check_gradients_across_floor(p, kTol);
  }
}

TEST_CASE("rfa: gradients at B = 1, where the threads split one row's heads and tokens") {
  RfaConfig cfg;
  cfg.gated = true, cfg.feature_map = FeatureMapKind::gaussian, cfg.num_features = 5, cfg.chunk_size = 4;
  cfg.eps_d = 0.02;
  AttentionDims d{1, 13, 2, 4};
  RfaProblem<double> p(cfg, d, 300);
  rfa::test::rfa_check_gradients(p, nullptr, kTol);
}

namespace {

template <typename T>
struct Grads {
  std::vector<T> dq, dk, dv, dn, dsigma, dgw, dgb;
};

// Forward + backward with dout = R; returns every gradient.
template <typename T>
Grads<T> run_backward(RfaProblem<T>& p, const std::vector<T>& R) {
  const size_t act = p.out.size();
  Grads<T> g{std::vector<T>(act), std::vector<T>(act), std::vector<T>(act), std::vector<T>(act),
             std::vector<T>(p.sigma.size()), std::vector<T>(p.gate_w.size()), std::vector<T>(p.gate_b.size())};
  p.forward();
  rfa_backward(RfaInputGrads<T>{g.dq.data(), g.dk.data(), g.dv.data(), g.dn.data()},
               RfaParamGrads<T>{g.dsigma.data(), g.dgw.data(), g.dgb.data()}, p.workspace(), R.data(), p.out.data(),
               p.saved.data(), p.inputs(), p.params(), p.cfg, p.d);
  return g;
}

// |a - b| <= tol * max|b|: float kernels (polynomial sin/cos/exp, float sums) against double.
void check_scaled(const char* name, const std::vector<float>& a, const std::vector<double>& b, double tol) {
  double scale = 0;
  for (double x : b) scale = std::max(scale, std::abs(x));
  rfa::test::check_close(name, a.data(), b.data(), a.size(), 0.0, tol * scale);
}

}  // namespace

TEST_CASE("rfa: the float forward and backward agree with the double ones") {
  for (FeatureMapKind kind : {FeatureMapKind::gaussian, FeatureMapKind::arccos}) {
    CAPTURE(int(kind));
    RfaConfig cfg;
    cfg.gated = true, cfg.feature_map = kind, cfg.num_features = 16, cfg.chunk_size = 16, cfg.eps_d = 0.05;
    AttentionDims d{2, 40, 2, 8};
    RfaProblem<double> pd(cfg, d, 700);
    RfaProblem<float> pf(cfg, d, 700);  // same draws, rounded to float
    auto Rd = rfa::test::random_vector<double>(pd.out.size(), 71);
    auto Rf = rfa::test::random_vector<float>(pf.out.size(), 71);
    auto gd = run_backward(pd, Rd);
    auto gf = run_backward(pf, Rf);
    check_scaled("out", pf.out, pd.out, 1e-5);
    check_scaled("dq", gf.dq, gd.dq, 2e-5);
    check_scaled("dk", gf.dk, gd.dk, 2e-5);
    check_scaled("dv", gf.dv, gd.dv, 2e-5);
    check_scaled("dn", gf.dn, gd.dn, 2e-5);
    check_scaled("dsigma", gf.dsigma, gd.dsigma, 2e-5);
    check_scaled("dgate_w", gf.dgw, gd.dgw, 2e-5);
    check_scaled("dgate_b", gf.dgb, gd.dgb, 2e-5);
  }
}
