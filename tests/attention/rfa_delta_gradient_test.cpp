// The rfa_delta backward (rfa_delta.h) in double:
//   - every gradient (q, k, v, n, sigma, gate_w, gate_b, beta_w, beta_b) against central
//     differences of L = sum(out * R), at chunk sizes that do not divide T, with an entering
//     state and with document boundaries;
//   - the gradients do not depend on the chunk size (chunks of 1, 4 and 7 == one chunk of T).
#include <doctest/doctest.h>

#include <vector>

#include "attention/rfa_delta.h"
#include "attention/rfa_delta_case.h"
#include "support/gradcheck.h"

using namespace rfa;
using rfa::test::RfaDeltaProblem;
using rfa::test::rfa_delta_config;

namespace {

struct Grads {
  std::vector<double> dq, dk, dv, dn, dsigma, dgw, dgb, dbw, dbb;
};

// The backward of L = sum(out * dout) after p.forward(state_in); the accumulated gradients start
// at 0.5 (the backward must add into them) and come back with the 0.5 taken off.
Grads backward(RfaDeltaProblem<double>& p, const std::vector<double>& dout, const double* state_in) {
  p.forward(state_in);
  const size_t act = p.out.size();
  Grads g{std::vector<double>(act, 0.5),          std::vector<double>(act, 0.5),
          std::vector<double>(act, 0.5),          std::vector<double>(act, 0.5),
          std::vector<double>(p.sigma.size(), 0.5), std::vector<double>(p.gate_w.size(), 0.5),
          std::vector<double>(p.gate_b.size(), 0.5), std::vector<double>(p.beta_w.size(), 0.5),
          std::vector<double>(p.beta_b.size(), 0.5)};
  rfa_delta_backward(RfaInputGrads<double>{g.dq.data(), g.dk.data(), g.dv.data(), g.dn.data()},
                     RfaDeltaParamGrads<double>{g.dsigma.data(), g.dgw.data(), g.dgb.data(), g.dbw.data(),
                                                g.dbb.data()},
                     p.workspace(), dout.data(), p.saved.data(), p.inputs(), p.params(), p.cfg, p.d);
  for (auto* v : {&g.dsigma, &g.dgw, &g.dgb, &g.dbw, &g.dbb})
    for (auto& x : *v) x -= 0.5;
  return g;
}

void check_all(RfaDeltaProblem<double>& p, const double* state_in) {
  const size_t act = p.out.size();
  const auto R = rfa::test::random_vector<double>(act, 77);
  const Grads g = backward(p, R, state_in);
  auto loss = [&] {
    p.forward(state_in);
    return rfa::test::weighted_sum(p.out.data(), R.data(), act);
  };
  const rfa::test::GradCheckTolerance tol{1e-6, 1e-6, 1e-9};
  rfa::test::check_gradient("q", p.q.data(), g.dq.data(), act, loss, tol);
  rfa::test::check_gradient("k", p.k.data(), g.dk.data(), act, loss, tol);
  rfa::test::check_gradient("v", p.v.data(), g.dv.data(), act, loss, tol);
  rfa::test::check_gradient("n", p.n.data(), g.dn.data(), act, loss, tol);
  rfa::test::check_gradient("sigma", p.sigma.data(), g.dsigma.data(), p.sigma.size(), loss, tol);
  rfa::test::check_gradient("gate_w", p.gate_w.data(), g.dgw.data(), p.gate_w.size(), loss, tol);
  rfa::test::check_gradient("gate_b", p.gate_b.data(), g.dgb.data(), p.gate_b.size(), loss, tol);
  rfa::test::check_gradient("beta_w", p.beta_w.data(), g.dbw.data(), p.beta_w.size(), loss, tol);
  rfa::test::check_gradient("beta_b", p.beta_b.data(), g.dbb.data(), p.beta_b.size(), loss, tol);
}

}  // namespace

TEST_CASE("rfa_delta: every gradient against central differences") {
  for (int chunk : {3, 4}) {
    CAPTURE(chunk);
    RfaDeltaProblem<double> p(rfa_delta_config(chunk), {2, 7, 2, 4}, 61);
    check_all(p, nullptr);
  }
}

TEST_CASE("rfa_delta: every gradient with an entering state") {
  RfaDeltaProblem<double> p(rfa_delta_config(3), {2, 7, 2, 4}, 62);
  const auto s_in = rfa::test::random_vector<double>(size_t(2) * 2 * 6 * 4, 9, 0.5);
  check_all(p, s_in.data());
}

TEST_CASE("rfa_delta: every gradient with document boundaries") {
  // Row 0: a flag at t = 0 (the entering state discarded) and one inside a chunk; row 1: tokens
  // that read the entering state, then a flag on a chunk's first row.
  const int T = 8;
  std::vector<uint8_t> starts(size_t(2) * T, 0);
  starts[0] = starts[5] = 1;
  starts[size_t(T) + 3] = 1;
  RfaDeltaProblem<double> p(rfa_delta_config(3), {2, T, 2, 4}, 63);
  p.starts = starts.data();
  const auto s_in = rfa::test::random_vector<double>(size_t(2) * 2 * 6 * 4, 10, 0.5);
  check_all(p, s_in.data());
}

TEST_CASE("rfa_delta: the gradients do not depend on the chunk size") {
  const int T = 13;
  RfaDeltaProblem<double> p(rfa_delta_config(T), {2, T, 2, 4}, 64);
  const auto R = rfa::test::random_vector<double>(p.out.size(), 78);
  const auto s_in = rfa::test::random_vector<double>(size_t(2) * 2 * 6 * 4, 11, 0.5);
  const Grads ref = backward(p, R, s_in.data());
  for (int chunk : {1, 4, 7}) {
    CAPTURE(chunk);
    p.cfg.chunk_size = chunk;
    p.resize();
    const Grads g = backward(p, R, s_in.data());
    const std::pair<const std::vector<double>*, const std::vector<double>*> pairs[] = {
        {&g.dq, &ref.dq},         {&g.dk, &ref.dk},   {&g.dv, &ref.dv},   {&g.dn, &ref.dn},   {&g.dsigma, &ref.dsigma},
        {&g.dgw, &ref.dgw},       {&g.dgb, &ref.dgb}, {&g.dbw, &ref.dbw}, {&g.dbb, &ref.dbb}};
    for (const auto& [a, b] : pairs) rfa::test::check_close("gradient", a->data(), b->data(), a->size(), 1e-11, 1e-13);
  }
}
