#pragma once
// Every gradient of one RfaProblem<double> against central differences of
// L = sum(out * R) (support/gradcheck.h's pattern): inputs q, k, v, n and
// parameters sigma, gate_w, gate_b. The RFA tests of each option set call it
// with their own step and tolerance.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "attention/rfa_layout.h"
#include "attention/rfa_test_case.h"
#include "support/gradcheck.h"

namespace rfa::test {

// The denominators (B, H, T) after a forward, split at the floor eps_d.
struct RfaDenCount {
  int floored = 0, free = 0;
  double closest = 1e300;  // min |den - eps_d|: finite differences must not cross the kink
};

inline RfaDenCount rfa_den_count(const RfaProblem<double>& p) {
  const RfaSavedLayout layout = rfa_saved_layout(p.cfg, p.d);
  RfaDenCount c;
  for (size_t i = 0; i < size_t(p.d.B) * p.d.H * p.d.T; ++i) {
    const double den = p.saved[layout.den + i];
    (den > p.cfg.eps_d ? c.free : c.floored)++;
    c.closest = std::min(c.closest, std::abs(den - p.cfg.eps_d));
  }
  return c;
}

// Checks all gradients of L = sum(out * R) with the forward entering `state_in`
// (null: empty); returns the denominator counts. Ungated, dn, dgate_w and dgate_b
// must stay untouched.
inline RfaDenCount rfa_check_gradients(RfaProblem<double>& p, const std::vector<double>* state_in,
                                       GradCheckTolerance tol) {
  const size_t act = p.out.size();
  auto R = random_vector<double>(act, 77);
  const double* s_in = state_in ? state_in->data() : nullptr;
  auto loss = [&] {
    p.forward(s_in);
    return weighted_sum(p.out.data(), R.data(), act);
  };
  loss();
  // Backward overwrites dq, dk, dv, dn and adds into the parameter gradients: start every
  // gradient at 0.5 and subtract it afterwards from the accumulated ones only.
  std::vector<double> dq(act, 0.5), dk(act, 0.5), dv(act, 0.5), dn(act, 0.5), dsigma(p.sigma.size(), 0.5),
      dgw(p.gate_w.size(), 0.5), dgb(p.gate_b.size(), 0.5);
  rfa_backward(RfaInputGrads<double>{dq.data(), dk.data(), dv.data(), dn.data()},
               RfaParamGrads<double>{dsigma.data(), dgw.data(), dgb.data()}, p.workspace(), R.data(), p.out.data(),
               p.saved.data(), p.inputs(), p.params(), p.cfg, p.d);
  for (auto* g : {&dsigma, &dgw, &dgb})
    for (auto& x : *g) x -= 0.5;
  if (!p.cfg.gated)
    for (auto& x : dn) x -= 0.5;  // untouched when ungated (checked to be 0 below), overwritten when gated
  const RfaDenCount den = rfa_den_count(p);
  REQUIRE(den.closest > 1e-4);
  check_gradient("q", p.q.data(), dq.data(), act, loss, tol);
  check_gradient("k", p.k.data(), dk.data(), act, loss, tol);
  check_gradient("v", p.v.data(), dv.data(), act, loss, tol);
  check_gradient("sigma", p.sigma.data(), dsigma.data(), p.sigma.size(), loss, tol);
  if (p.cfg.gated) {
    check_gradient("n", p.n.data(), dn.data(), act, loss, tol);
    check_gradient("gate_w", p.gate_w.data(), dgw.data(), p.gate_w.size(), loss, tol);
    check_gradient("gate_b", p.gate_b.data(), dgb.data(), p.gate_b.size(), loss, tol);
  } else {
    const auto zero = [](double x) { return x == 0.0; };
    CHECK(std::all_of(dn.begin(), dn.end(), zero));
    CHECK(std::all_of(dgw.begin(), dgw.end(), zero));
    CHECK(std::all_of(dgb.begin(), dgb.end(), zero));
  }
  return den;
}

// The gradient check with the denominator floor active on some tokens and not on others (more than
// 5 of each): it passes only if the floor passes no gradient through den (dden = 0 on the floor).
inline void rfa_check_gradients_across_floor(RfaProblem<double>& p, const GradCheckTolerance& tol) {
  const RfaDenCount den = rfa_check_gradients(p, nullptr, tol);
  CAPTURE(den.floored);
  CAPTURE(den.free);
  CHECK(den.floored > 5);
  CHECK(den.free > 5);
}

}  // namespace rfa::test
