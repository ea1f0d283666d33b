// The chunked form (training) against the token-by-token recurrence (decoding),
// and state carrying across segments.
#include <doctest/doctest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/error.h"

#include "attention/rfa_recurrent.h"
#include "attention/rfa_test_case.h"

using namespace rfa;
using rfa::test::RfaProblem;

namespace {

// Runs rfa_step_reference over all T positions; returns out (B, T, C).
template <typename T>
std::vector<T> run_recurrent(RfaProblem<T>& p, RfaState<T>& state, int t_begin, int t_end) {
  const int C = p.d.C(), B = p.d.B, Tn = p.d.T;
  std::vector<T> out(size_t(B) * Tn * C, T(0)), qt(size_t(B) * C), kt(qt.size()), vt(qt.size()), nt(qt.size()),
      ot(qt.size());
  for (int t = t_begin; t < t_end; ++t) {
    for (int b = 0; b < B; ++b)
      for (int c = 0; c < C; ++c) {
        const size_t src = (size_t(b) * Tn + t) * C + c, dst = size_t(b) * C + c;
        qt[dst] = p.q[src], kt[dst] = p.k[src], vt[dst] = p.v[src], nt[dst] = p.n[src];
      }
    RfaInputs<T> in{qt.data(), kt.data(), vt.data(), nt.data()};
    rfa_step_reference(ot.data(), state, in, p.params(), p.cfg);
    for (int b = 0; b < B; ++b)
      std::copy(ot.begin() + size_t(b) * C, ot.begin() + size_t(b + 1) * C, out.begin() + (size_t(b) * Tn + t) * C);
  }
  return out;
}

template <typename T>
void check_chunked_equals_recurrent(double rtol, double atol) {
  for (bool gated : {true, false})
    for (FeatureMapKind kind : {FeatureMapKind::gaussian, FeatureMapKind::arccos})
      for (int chunk : {1, 7, 64}) {
        CAPTURE(gated);
        CAPTURE(int(kind));
        CAPTURE(chunk);
        RfaConfig cfg;
        cfg.gated = gated, cfg.feature_map = kind, cfg.num_features = 16, cfg.chunk_size = chunk;
        cfg.eps_d = 1e-3;
        AttentionDims d{2, 150, 2, 8};  // 150 is not a multiple of 7 or 64
        RfaProblem<T> p(cfg, d, 100);
        p.forward();
        auto state = rfa_state_create<T>(cfg, d.B, d.H, d.Dh);
        auto ref = run_recurrent(p, state, 0, d.T);
        rfa::test::check_close("chunked vs recurrent", p.out.data(), ref.data(), ref.size(), rtol, atol);
        // The chunked form's final state equals the recurrence's.
        std::vector<T> state_out(state.S.size());
        p.forward(nullptr, state_out.data());
        rfa::test::check_close("final state", state_out.data(), state.S.data(), state_out.size(), rtol, atol);
      }
}

}  // namespace

TEST_CASE("rfa: chunked forward equals the recurrence (double)") { check_chunked_equals_recurrent<double>(1e-10, 1e-12); }

TEST_CASE("rfa: chunked forward equals the recurrence (float)") { check_chunked_equals_recurrent<float>(1e-4, 1e-5); }

TEST_CASE("rfa: segments with carried state equal one pass; prefill then steps equals the full forward") {
  for (bool gated : {true, false}) {
    CAPTURE(gated);
    RfaConfig cfg;
    cfg.gated = gated, cfg.num_features = 8, cfg.chunk_size = 5;
    AttentionDims d{3, 40, 2, 4};
    RfaProblem<double> full(cfg, d, 200);
    full.forward();
    // Same data split into [0, 17) and [17, 40), state carried in place.
    auto state = rfa_state_create<double>(cfg, d.B, d.H, d.Dh);
    std::vector<double> out_split(full.out.size());
    for (auto [t0, t1] : {std::pair{0, 17}, std::pair{17, 40}}) {
      AttentionDims seg{d.B, t1 - t0, d.H, d.Dh};
      const int C = d.C();
      std::vector<double> q, k, v, n, o(size_t(d.B) * seg.T * C);
      for (int b = 0; b < d.B; ++b) {
        auto from = [&](const std::vector<double>& x, std::vector<double>& to) {
          to.insert(to.end(), x.begin() + (size_t(b) * d.T + t0) * C, x.begin() + (size_t(b) * d.T + t1) * C);
        };
        from(full.q, q), from(full.k, k), from(full.v, v), from(full.n, n);
      }
      std::vector<double> ws(rfa_workspace_size(cfg, seg, thread_count()));
      rfa_prefill(o.data(), state.view(), Workspace<double>{ws.data(), ws.size()}, RfaInputs<double>{q.data(), k.data(), v.data(), n.data()},
                  full.params(), cfg, seg);
      for (int b = 0; b < d.B; ++b)
        std::copy(o.begin() + size_t(b) * seg.T * C, o.begin() + size_t(b + 1) * seg.T * C,
                  out_split.begin() + (size_t(b) * d.T + t0) * C);
    }
    rfa::test::check_close("two segments vs one pass", out_split.data(), full.out.data(), out_split.size(), 1e-10, 1e-12);
    // Prefill [0, 17) then decode the rest token by token.
    auto st = rfa_state_create<double>(cfg, d.B, d.H, d.Dh);
    AttentionDims seg{d.B, 17, d.H, d.Dh};
    RfaProblem<double> prompt(cfg, seg, 200);  // buffers of the prompt's shape; filled from `full` below
    const int C = d.C();
    for (int b = 0; b < d.B; ++b)
      for (size_t x = 0; x < size_t(17) * C; ++x) {
        const size_t s = size_t(b) * d.T * C + x, t = size_t(b) * 17 * C + x;
        prompt.q[t] = full.q[s], prompt.k[t] = full.k[s], prompt.v[t] = full.v[s], prompt.n[t] = full.n[s];
      }
    std::vector<double> o(size_t(d.B) * 17 * C);
    rfa_prefill(o.data(), st.view(), prompt.workspace(), prompt.inputs(), full.params(), cfg, seg);
    auto rest = run_recurrent(full, st, 17, d.T);
    for (int b = 0; b < d.B; ++b)
      for (int t = 17; t < d.T; ++t)
        for (int c = 0; c < C; ++c) {
          const size_t at = (size_t(b) * d.T + t) * C + c;
          CHECK(rest[at] == doctest::Approx(full.out[at]).epsilon(1e-10));
        }
  }
}

TEST_CASE("rfa: prefill rejects a state of another shape") {
  RfaConfig cfg;
  AttentionDims d{2, 10, 2, 4};
  RfaProblem<float> p(cfg, d, 1);
  auto st = rfa_state_create<float>(cfg, 3, d.H, d.Dh);
  CHECK_THROWS_AS(rfa_prefill(p.out.data(), st.view(), p.workspace(), p.inputs(), p.params(), cfg, d), rfa::Error);
}

TEST_CASE("rfa: a reset state decodes like a fresh one") {
  RfaConfig cfg;
  AttentionDims d{2, 6, 2, 4};
  RfaProblem<double> p(cfg, d, 600);
  auto fresh = rfa_state_create<double>(cfg, d.B, d.H, d.Dh);
  auto first = run_recurrent(p, fresh, 0, d.T);
  rfa_state_reset(fresh);
  auto second = run_recurrent(p, fresh, 0, d.T);
  CHECK(first == second);
  CHECK(std::any_of(first.begin(), first.end(), [](double x) { return x != 0.0; }));
}

TEST_CASE("rfa: edge shapes (one token, one chunk exactly, chunk longer than T)") {
  for (auto [T, chunk] : {std::pair{1, 64}, std::pair{16, 16}, std::pair{5, 64}, std::pair{17, 16}}) {
    CAPTURE(T);
    CAPTURE(chunk);
    RfaConfig cfg;
    cfg.num_features = 8, cfg.chunk_size = chunk;
    AttentionDims d{2, T, 3, 4};
    RfaProblem<double> p(cfg, d, 800);
    p.forward();
    auto state = rfa_state_create<double>(cfg, d.B, d.H, d.Dh);
    auto ref = run_recurrent(p, state, 0, d.T);
    rfa::test::check_close("chunked vs recurrent", p.out.data(), ref.data(), ref.size(), 1e-10, 1e-12);
  }
}

TEST_CASE("rfa: a chunk longer than the sequence is one chunk of T (same outputs and gradients, T² saved, not chunk²)") {
  for (bool feature_gate : {false, true}) {
    CAPTURE(feature_gate);
    const AttentionDims d{2, 37, 2, 4};
    RfaConfig long_chunk;
    long_chunk.num_features = 6, long_chunk.feature_gate = feature_gate, long_chunk.chunk_size = 4096;
    RfaConfig exact = long_chunk;
    exact.chunk_size = d.T;
    // The saved scores are (B, H, 1, T, T) either way; before, chunk_size 4096 sized them 4096².
    CHECK(rfa_saved_size(long_chunk, d) == rfa_saved_size(exact, d));
    CHECK(rfa_workspace_size(long_chunk, d, 2) == rfa_workspace_size(exact, d, 2));
    RfaProblem<double> a(long_chunk, d, 31), b(exact, d, 31);
    a.forward(), b.forward();
    CHECK(a.out == b.out);
    const size_t act = size_t(d.B) * d.T * d.C();
    auto grads = [&](RfaProblem<double>& p) {
      std::vector<double> dq(act), dk(act), dv(act), dn(act), ds(p.sigma.size()), dgw(p.gate_w.size()),
          dgb(p.gate_b.size());
      const std::vector<double> dout(p.v);  // any fixed upstream gradient
      rfa_backward(RfaInputGrads<double>{dq.data(), dk.data(), dv.data(), dn.data()},
                   RfaParamGrads<double>{ds.data(), dgw.data(), dgb.data()}, p.workspace(), dout.data(),
                   p.out.data(), p.saved.data(), p.inputs(), p.params(), p.cfg, p.d);
      return std::vector<std::vector<double>>{dq, dk, dv, dn, ds, dgw, dgb};
    };
    CHECK(grads(a) == grads(b));
  }
}
