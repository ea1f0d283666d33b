// The feature gate (RfaConfig::feature_gate) and the time discount
// (RfaConfig::time_discount): gradients against central differences in double
// (both feature maps, an entering state, the denominator floor active), the
// chunked form against the token-by-token recurrence (chunks 1, 7, 64, a length
// that is no multiple of them, gates near 0 and near 1), carried state, and the
// fused decode step against the full forward at every position.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "attention/rfa_feature_gate.h"
#include "attention/rfa_gradcheck.h"
#include "attention/rfa_recurrent.h"
#include "attention/rfa_test_case.h"

using namespace rfa;
using rfa::test::RfaProblem;

namespace {

struct Variant {
  bool gated, feature, discount;
};
const Variant kVariants[] = {{true, true, false}, {true, true, true}, {true, false, true}, {false, false, true}};

RfaConfig variant_config(const Variant& v, FeatureMapKind map, int D, int chunk, double eps_d) {
  RfaConfig c;
  c.gated = v.gated, c.feature_gate = v.feature, c.time_discount = v.discount, c.discount_c = 2.0;
  c.feature_map = map, c.num_features = D, c.chunk_size = chunk, c.eps_d = eps_d;
  return c;
}

// Gates near 0 and 1: gate biases of +-30 (log-gates of about -30 where near 0), alternating.
template <typename T>
void extreme_gates(RfaProblem<T>& p) {
  for (size_t i = 0; i < p.gate_b.size(); ++i) p.gate_b[i] = T(i % 3 == 0 ? 30 : (i % 3 == 1 ? -30 : 0.5));
  for (auto& w : p.gate_w) w *= T(0.1);
}

// eps 1e-5: at 1e-6 the rounding of the loss (45 rows, weights up to log(48 + 2)) reached 1e-4
// relative on the smallest entries with or without the new options; 1e-5 leaves ~3e-6.
const rfa::test::GradCheckTolerance kTol{1e-5, 1e-5, 1e-8, 80};

// rfa_step_reference over rows [t_begin, t_end) (row t at absolute position p.pos0 + t); out (B, T, C).
template <typename T>
std::vector<T> run_recurrent(RfaProblem<T>& p, RfaState<T>& state, int t_begin, int t_end, bool fused) {
  const int C = p.d.C(), B = p.d.B, Tn = p.d.T;
  std::vector<T> out(size_t(B) * Tn * C, T(0)), qt(size_t(B) * C), kt(qt.size()), vt(qt.size()), nt(qt.size()),
      ot(qt.size()), Wt(p.W.size());
  rfa_random_transpose(Wt.data(), p.W.data(), p.d.H, p.cfg.num_features, p.d.Dh);
  for (int t = t_begin; t < t_end; ++t) {
    for (int b = 0; b < B; ++b)
      for (int c = 0; c < C; ++c) {
        const size_t src = (size_t(b) * Tn + t) * C + c, dst = size_t(b) * C + c;
        qt[dst] = p.q[src], kt[dst] = p.k[src], vt[dst] = p.v[src], nt[dst] = p.n[src];
      }
    RfaInputs<T> in{qt.data(), kt.data(), vt.data(), nt.data(), p.pos0 + t};
    const std::vector<int64_t> pos(size_t(B), p.pos0 + t);
    if (fused) rfa_decode_step(ot.data(), state.view(), in, p.params(), Wt.data(), p.cfg, AttentionRows{B, nullptr, pos.data()});
    else rfa_step_reference(ot.data(), state, in, p.params(), p.cfg);
    for (int b = 0; b < B; ++b)
      std::copy(ot.begin() + size_t(b) * C, ot.begin() + size_t(b + 1) * C, out.begin() + (size_t(b) * Tn + t) * C);
  }
  return out;
}

template <typename T>
bool all_finite(const std::vector<T>& x) {
  return std::all_of(x.begin(), x.end(), [](T v) { return std::isfinite(v); });
}

template <typename T>
void check_chunked_equals_recurrent(double rtol, double atol) {
  for (const Variant& v : kVariants)
    for (FeatureMapKind map : {FeatureMapKind::gaussian, FeatureMapKind::arccos})
      for (int chunk : {1, 7, 64})
        for (bool extreme : {false, true}) {
          CAPTURE(v.feature);
          CAPTURE(v.discount);
          CAPTURE(v.gated);
          CAPTURE(int(map));
          CAPTURE(chunk);
          CAPTURE(extreme);
          if (extreme && !v.gated) continue;
          const RfaConfig cfg = variant_config(v, map, 16, chunk, 1e-3);
          AttentionDims d{2, 150, 2, 8};  // 150 is not a multiple of 7 or 64
          RfaProblem<T> p(cfg, d, 100);
          p.pos0 = 5;
          if (extreme) extreme_gates(p);
          std::vector<T> state_out(size_t(d.B) * d.H * rfa_feature_count(cfg) * (d.Dh + 1));
          p.forward(nullptr, state_out.data());
          auto state = rfa_state_create<T>(cfg, d.B, d.H, d.Dh);
          auto ref = run_recurrent(p, state, 0, d.T, false);
          CHECK(all_finite(p.out));
          CHECK(all_finite(state_out));
          rfa::test::check_close("chunked vs recurrent", p.out.data(), ref.data(), ref.size(), rtol, atol);
          rfa::test::check_close("final state", state_out.data(), state.S.data(), state_out.size(), rtol, atol);
        }
}

// Forward, then backward with dout = R into g = {dq, dk, dv, dn, dsigma, dgate_w, dgate_b}.
template <typename T>
void run_backward(RfaProblem<T>& p, const std::vector<T>& R, std::vector<std::vector<T>>& g) {
  p.forward();
  rfa_backward(RfaInputGrads<T>{g[0].data(), g[1].data(), g[2].data(), g[3].data()},
               RfaParamGrads<T>{g[4].data(), g[5].data(), g[6].data()}, p.workspace(), R.data(), p.out.data(),
               p.saved.data(), p.inputs(), p.params(), p.cfg, p.d);
}

}  // namespace

TEST_CASE("rfa feature gate / time discount: gradients match central differences") {
  for (const Variant& v : kVariants)
    for (FeatureMapKind map : {FeatureMapKind::gaussian, FeatureMapKind::arccos})
      for (bool with_state : {false, true}) {
        CAPTURE(v.feature);
        CAPTURE(v.discount);
        CAPTURE(v.gated);
        CAPTURE(int(map));
        CAPTURE(with_state);
        // chunks of 4 rows with sub-chunks of 16 would never leave the diagonal block:
        // chunks of 40 (sub-chunks 16, 16, 8) and T = 45 cover both paths and a partial chunk.
        const RfaConfig cfg = variant_config(v, map, 3, 40, 0.025);
        AttentionDims d{1, 45, 2, 4};
        RfaProblem<double> p(cfg, d, 300);
        p.pos0 = 3;
        std::vector<double> state;
        if (with_state) {
          RfaProblem<double> before(cfg, d, 400);
          state.resize(size_t(d.B) * d.H * rfa_feature_count(cfg) * (d.Dh + 1));
          before.forward(nullptr, state.data());
        }
        rfa::test::rfa_check_gradients(p, with_state ? &state : nullptr, kTol);
      }
}

TEST_CASE("rfa feature gate / time discount: the denominator floor passes no gradient where it is active") {
  for (const Variant& v : kVariants)
    for (FeatureMapKind map : {FeatureMapKind::gaussian, FeatureMapKind::arccos}) {
      CAPTURE(v.feature);
      CAPTURE(v.discount);
      CAPTURE(int(map));
      // The discount scales the denominators by log(t + 2), up to ~3.6 here: the floor with it.
      const double floor = (map == FeatureMapKind::gaussian ? 0.3 : 0.15) * (v.discount ? 3.0 : 1.0);
      const RfaConfig cfg = variant_config(v, map, 3, 20, floor);
      AttentionDims d{2, 37, 2, 4};
      RfaProblem<double> p(cfg, d, 500);
      rfa::test::rfa_check_gradients_across_floor(p, kTol);
    }
}

TEST_CASE("rfa feature gate / time discount: chunked forward equals the recurrence (double)") {
  check_chunked_equals_recurrent<double>(1e-10, 1e-12);
}

TEST_CASE("rfa feature gate / time discount: chunked forward equals the recurrence (float)") {
  check_chunked_equals_recurrent<float>(1e-4, 1e-5);
}

TEST_CASE("rfa feature gate / time discount: decode equals the full forward at every position") {
  for (const Variant& v : kVariants)
    for (bool extreme : {false, true}) {
      CAPTURE(v.feature);
      CAPTURE(v.discount);
      CAPTURE(extreme);
      if (extreme && !v.gated) continue;
      const RfaConfig cfg = variant_config(v, FeatureMapKind::gaussian, 16, 64, 0.05);
      AttentionDims d{2, 150, 2, 8};
      RfaProblem<float> p(cfg, d, 900);
      p.pos0 = 1000;  // the discount reads absolute positions
      if (extreme) extreme_gates(p);
      p.forward();
      // Every position by the fused step from an empty state.
      auto state = rfa_state_create<float>(cfg, d.B, d.H, d.Dh);
      auto stepped = run_recurrent(p, state, 0, d.T, true);
      rfa::test::check_close("decode vs forward", stepped.data(), p.out.data(), p.out.size(), 1e-4, 1e-5);
    }
}

TEST_CASE("rfa feature gate / time discount: segments with carried state and position equal one pass") {
  for (const Variant& v : kVariants) {
    CAPTURE(v.feature);
    CAPTURE(v.discount);
    const RfaConfig cfg = variant_config(v, FeatureMapKind::arccos, 16, 16, 0.05);
    const AttentionDims d{1, 100, 2, 8}, d1{1, 37, 2, 8}, d2{1, 63, 2, 8};
    RfaProblem<double> p(cfg, d, 1300);
    p.forward();
    // Prefill of rows [0, 37) then [37, 100) at pos0 = 37, the state carried (B = 1: rows are contiguous).
    auto state = rfa_state_create<double>(cfg, 1, d.H, d.Dh);
    std::vector<double> out(p.out.size()), ws(rfa_workspace_size(cfg, d, thread_count()));
    const size_t split = size_t(37) * d.C();
    RfaInputs<double> in1{p.q.data(), p.k.data(), p.v.data(), p.n.data(), 0};
    RfaInputs<double> in2{p.q.data() + split, p.k.data() + split, p.v.data() + split, p.n.data() + split, 37};
    rfa_prefill(out.data(), state.view(), Workspace<double>{ws.data(), ws.size()}, in1, p.params(), cfg, d1);
    rfa_prefill(out.data() + split, state.view(), Workspace<double>{ws.data(), ws.size()}, in2, p.params(), cfg, d2);
    rfa::test::check_close("segments vs one pass", out.data(), p.out.data(), out.size(), 1e-10, 1e-12);
  }
}

TEST_CASE("rfa feature gate: float forward and backward agree with double") {
  RfaConfig cfg = variant_config({true, true, true}, FeatureMapKind::gaussian, 16, 64, 0.05);
  AttentionDims d{2, 100, 2, 8};
  RfaProblem<double> pd(cfg, d, 700);
  RfaProblem<float> pf(cfg, d, 700);
  const size_t act = pd.out.size();
  std::vector<std::vector<double>> gd{std::vector<double>(act), std::vector<double>(act), std::vector<double>(act),
                                      std::vector<double>(act), std::vector<double>(pd.sigma.size()),
                                      std::vector<double>(pd.gate_w.size()), std::vector<double>(pd.gate_b.size())};
  std::vector<std::vector<float>> gf(gd.size());
  for (size_t i = 0; i < gd.size(); ++i) gf[i].resize(gd[i].size());
  auto Rd = rfa::test::random_vector<double>(act, 71);
  auto Rf = rfa::test::random_vector<float>(act, 71);
  run_backward(pd, Rd, gd);
  run_backward(pf, Rf, gf);
  const char* names[] = {"dq", "dk", "dv", "dn", "dsigma", "dgate_w", "dgate_b"};
  for (size_t i = 0; i < gd.size(); ++i) {
    double scale = 0;
    for (double x : gd[i]) scale = std::max(scale, std::abs(x));
    rfa::test::check_close(names[i], gf[i].data(), gd[i].data(), gd[i].size(), 0.0, 3e-5 * scale);
  }
  double scale = 0;
  for (double x : pd.out) scale = std::max(scale, std::abs(x));
  rfa::test::check_close("out", pf.out.data(), pd.out.data(), act, 0.0, 1e-5 * scale);
}

TEST_CASE("rfa time discount: a horizon holds t past it, in the chunked form and the recurrence alike") {
  for (bool feature : {false, true}) {
    CAPTURE(feature);
    RfaConfig cfg = variant_config({true, feature, true}, FeatureMapKind::gaussian, 16, 64, 1e-3);
    cfg.discount_horizon = 40;  // crossed inside the first chunk (rows from position 5)
    AttentionDims d{2, 150, 2, 8};
    RfaProblem<double> p(cfg, d, 1500);
    p.pos0 = 5;
    p.forward();
    auto state = rfa_state_create<double>(cfg, d.B, d.H, d.Dh);
    auto ref = run_recurrent(p, state, 0, d.T, false);
    rfa::test::check_close("chunked vs recurrent", p.out.data(), ref.data(), ref.size(), 1e-10, 1e-12);
    // Rows before the horizon are as without it; rows past it differ.
    std::vector<double> capped = p.out;
    p.cfg.discount_horizon = 0;
    p.forward();
    const size_t C = size_t(d.C());
    double before = 0, after = 0;
    for (size_t i = 0; i < p.out.size(); ++i) {
      const size_t t = (i / C) % size_t(d.T);
      (t + 5 <= 40 ? before : after) = std::max(t + 5 <= 40 ? before : after, std::abs(p.out[i] - capped[i]));
    }
    CHECK(before == 0.0);
    CHECK(after > 1e-3);
  }
}
