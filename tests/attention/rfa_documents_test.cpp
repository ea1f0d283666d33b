// The RFA chunked form with document boundaries (RfaInputs::segment_start), for every gate
// (none, scalar, feature) with and without the time discount:
//   - a packed row equals its documents run one by one (outputs, every input gradient and the
//     parameter gradients), for chunk sizes that put the boundaries inside chunks, on a chunk's
//     first row and in chunks of one row;
//   - every gradient against central differences, with and without an entering state (which a
//     flag at t = 0 discards, and which reaches the tokens before a row's first flag otherwise).
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "attention/rfa_gradcheck.h"
#include "attention/rfa_test_case.h"

using namespace rfa;
using rfa::test::RfaProblem;

namespace {

struct GateCase {
  const char* name;
  bool gated, feature, discount;
};
constexpr GateCase kGates[] = {{"rfa", false, false, false},          {"rfa time discount", false, false, true},
                               {"rfa_gate", true, false, false},      {"rfa_gate time discount", true, false, true},
                               {"rfa_gate feature gate", true, true, false},
                               {"rfa_gate feature gate and discount", true, true, true}};

RfaConfig config_of(const GateCase& g, int chunk) {
  RfaConfig c;
  c.gated = g.gated, c.feature_gate = g.feature, c.time_discount = g.discount;
  c.num_features = 5, c.chunk_size = chunk, c.eps_d = 0.02;
  return c;
}

// Rows of document lengths summing to T; a negative first length: a document begun before the row.
std::vector<uint8_t> starts_of(const std::vector<std::vector<int>>& rows, int T) {
  std::vector<uint8_t> starts(rows.size() * size_t(T), 0);
  for (size_t b = 0; b < rows.size(); ++b) {
    int t = 0;
    for (int len : rows[b]) {
      if (len > 0) starts[b * T + t] = 1;
      t += len < 0 ? -len : len;
    }
    REQUIRE(t == T);
  }
  return starts;
}

struct Grads {
  std::vector<double> dq, dk, dv, dn, dsigma, dgw, dgb;
};

Grads backward(RfaProblem<double>& p, const std::vector<double>& dout) {
  const size_t act = p.out.size();
  Grads g{std::vector<double>(act), std::vector<double>(act), std::vector<double>(act), std::vector<double>(act),
          std::vector<double>(p.sigma.size()), std::vector<double>(p.gate_w.size()), std::vector<double>(p.gate_b.size())};
  rfa_backward(RfaInputGrads<double>{g.dq.data(), g.dk.data(), g.dv.data(), g.dn.data()},
               RfaParamGrads<double>{g.dsigma.data(), g.dgw.data(), g.dgb.data()}, p.workspace(), dout.data(),
               p.out.data(), p.saved.data(), p.inputs(), p.params(), p.cfg, p.d);
  return g;
}

void add(std::vector<double>& into, const std::vector<double>& x) {
  for (size_t i = 0; i < x.size(); ++i) into[i] += x[i];
}

}  // namespace

TEST_CASE("rfa documents: a packed row equals its documents run separately, every gate and chunk size") {
  const int T = 19;
  const std::vector<std::vector<int>> rows = {{5, 3, 4, 1, 6}, {-2, 17}};  // row 1 continues a document
  const std::vector<uint8_t> starts = starts_of(rows, T);
  for (const GateCase& gate : kGates)
    for (int chunk : {1, 3, 4, 7, 64}) {
      CAPTURE(gate.name);
      CAPTURE(chunk);
      const RfaConfig cfg = config_of(gate, chunk);
      const AttentionDims d{2, T, 2, 4};
      const int C = d.C();
      RfaProblem<double> packed(cfg, d, 500);
      packed.starts = starts.data();
      packed.forward();
      const std::vector<double> dout = test::random_vector<double>(packed.out.size(), 91);
      const Grads pg = backward(packed, dout);

      Grads sum{{}, {}, {}, {}, std::vector<double>(packed.sigma.size()), std::vector<double>(packed.gate_w.size()),
                std::vector<double>(packed.gate_b.size())};
      for (int b = 0; b < d.B; ++b) {
        int t0 = 0;
        for (int len : rows[size_t(b)]) {
          len = std::abs(len);
          CAPTURE(b);
          CAPTURE(t0);
          RfaProblem<double> alone(cfg, AttentionDims{1, len, d.H, d.Dh}, 600);
          const size_t from = (size_t(b) * T + t0) * C, n = size_t(len) * C;
          for (auto [dst, src] : {std::pair{&alone.q, &packed.q}, {&alone.k, &packed.k}, {&alone.v, &packed.v},
                                  {&alone.n, &packed.n}})
            std::copy_n(src->begin() + from, n, dst->begin());
          alone.sigma = packed.sigma, alone.gate_w = packed.gate_w, alone.gate_b = packed.gate_b, alone.W = packed.W;
          alone.forward();
          test::check_close("out", alone.out.data(), packed.out.data() + from, n, 1e-10, 1e-13);
          const std::vector<double> dslice(dout.begin() + from, dout.begin() + from + n);
          const Grads ag = backward(alone, dslice);
          test::check_close("dq", ag.dq.data(), pg.dq.data() + from, n, 1e-9, 1e-12);
          test::check_close("dk", ag.dk.data(), pg.dk.data() + from, n, 1e-9, 1e-12);
          test::check_close("dv", ag.dv.data(), pg.dv.data() + from, n, 1e-9, 1e-12);
          if (cfg.gated) test::check_close("dn", ag.dn.data(), pg.dn.data() + from, n, 1e-9, 1e-12);
          add(sum.dsigma, ag.dsigma), add(sum.dgw, ag.dgw), add(sum.dgb, ag.dgb);
          t0 += len;
        }
      }
      test::check_close("dsigma", sum.dsigma.data(), pg.dsigma.data(), sum.dsigma.size(), 1e-9, 1e-12);
      test::check_close("dgate_w", sum.dgw.data(), pg.dgw.data(), sum.dgw.size(), 1e-9, 1e-12);
      test::check_close("dgate_b", sum.dgb.data(), pg.dgb.data(), sum.dgb.size(), 1e-9, 1e-12);
    }
}

TEST_CASE("rfa documents: gradients with boundaries match central differences, with an entering state") {
  const rfa::test::GradCheckTolerance tol{1e-6, 2e-6, 1e-8, 80};
  const int T = 13;
  // Row 0 starts a document at t = 0 (its entering state is discarded) and at 5 (inside chunk 1)
  // and 8 (chunk 2's first row); row 1 continues its entering state until 6.
  const std::vector<uint8_t> starts = starts_of({{5, 3, 5}, {-6, 7}}, T);
  for (const GateCase& gate : kGates)
    for (bool with_state : {false, true}) {
      CAPTURE(gate.name);
      CAPTURE(with_state);
      const RfaConfig cfg = config_of(gate, 4);
      const AttentionDims d{2, T, 2, 4};
      RfaProblem<double> p(cfg, d, 700);
      p.starts = starts.data();
      p.pos0 = with_state ? 9 : 0;
      std::vector<double> state;
      if (with_state) {
        RfaProblem<double> before(cfg, d, 800);
        state.resize(size_t(d.B) * d.H * rfa_feature_count(cfg) * (d.Dh + 1));
        before.forward(nullptr, state.data());
      }
      rfa::test::rfa_check_gradients(p, with_state ? &state : nullptr, tol);
    }
}
