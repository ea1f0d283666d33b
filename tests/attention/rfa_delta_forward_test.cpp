// The rfa_delta forward (rfa_delta.h) against the plain double reference (rfa_delta_case.h):
//   - the chunked training form == the reference for chunk sizes that do and do not divide T,
//     with and without an entering state, in double and in float;
//   - the gaussian features have |phi|² = 1 (what the delta rule needs to stay bounded);
//   - a carried state (state_out of one segment as state_in of the next) == one long run;
//   - document boundaries (segment_start) == the documents run one by one;
//   - the decoding step (rfa_delta_step) == the forward at every position.
#include <doctest/doctest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "attention/feature_map.h"
#include "attention/rfa_delta.h"
#include "attention/rfa_delta_case.h"
#include "attention/rfa_delta_layout.h"
#include "support/gradcheck.h"

using namespace rfa;
using rfa::test::RfaDeltaProblem;
using rfa::test::rfa_delta_config;

namespace {

std::vector<double> random_state(const RfaDeltaProblem<double>& p, uint64_t seed) {
  return rfa::test::random_vector<double>(size_t(p.d.B) * p.d.H * 2 * p.cfg.num_features * p.d.Dh, seed, 0.5);
}

}  // namespace

TEST_CASE("rfa_delta: the chunked form equals the full-sequence reference for uneven chunks and lengths") {
  for (int T : {1, 7, 13})
    for (int chunk : {1, 3, 5, 64})
      for (bool entering : {false, true}) {
        CAPTURE(T);
        CAPTURE(chunk);
        CAPTURE(entering);
        RfaDeltaProblem<double> p(rfa_delta_config(chunk), {2, T, 2, 4}, 11);
        const std::vector<double> s_in = random_state(p, 5);
        std::vector<double> s_out(s_in.size()), ref_out, ref_state(s_in.size());
        p.forward(entering ? s_in.data() : nullptr, s_out.data());
        rfa::test::rfa_delta_reference(ref_out, p, entering ? s_in.data() : nullptr, ref_state.data());
        rfa::test::check_close("out", p.out.data(), ref_out.data(), ref_out.size(), 1e-10, 1e-12);
        rfa::test::check_close("state_out", s_out.data(), ref_state.data(), ref_state.size(), 1e-10, 1e-12);
      }
}

TEST_CASE("rfa_delta: the float forward follows the double reference") {
  RfaDeltaProblem<double> pd(rfa_delta_config(5), {2, 29, 2, 8}, 3);
  RfaDeltaProblem<float> pf(rfa_delta_config(5), {2, 29, 2, 8}, 3);
  pd.forward();
  pf.forward();
  std::vector<double> ref;
  rfa::test::rfa_delta_reference(ref, pd, nullptr, nullptr);
  rfa::test::check_close("out", pf.out.data(), ref.data(), ref.size(), 1e-4, 1e-5);
}

TEST_CASE("rfa_delta: the gaussian features have unit norm") {
  RfaDeltaProblem<double> p(rfa_delta_config(4), {1, 9, 2, 4}, 21);
  p.forward();
  RfaDeltaSaved<double> sv{};
  sv.carve(p.saved.data(), rfa_delta_dims(p.cfg, p.d), p.d);
  const int F = rfa_feature_count(p.cfg);
  for (size_t r = 0; r < size_t(p.d.B) * p.d.H * p.d.T; ++r) {
    double qq = 0, kk = 0;
    for (int f = 0; f < F; ++f) {
      qq += sv.phi_q[r * F + f] * sv.phi_q[r * F + f];
      kk += sv.phi_k[r * F + f] * sv.phi_k[r * F + f];
    }
    CHECK(qq == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(kk == doctest::Approx(1.0).epsilon(1e-12));
  }
}

TEST_CASE("rfa_delta: a carried state equals one long run") {
  const int T = 13;
  for (int split : {1, 5, 9}) {
    CAPTURE(split);
    RfaDeltaProblem<double> whole(rfa_delta_config(4), {2, T, 2, 4}, 31);
    whole.forward();
    const int C = whole.d.C();
    std::vector<double> state(size_t(2) * 2 * 6 * 4), out(whole.out.size());
    for (int part = 0; part < 2; ++part) {
      const int t0 = part ? split : 0, len = part ? T - split : split;
      RfaDeltaProblem<double> seg(rfa_delta_config(4), {2, len, 2, 4}, 31);
      auto slice = [&](std::vector<double>& dst, const std::vector<double>& src) {
        for (int b = 0; b < 2; ++b)
          std::copy_n(&src[(size_t(b) * T + t0) * C], size_t(len) * C, &dst[size_t(b) * len * C]);
      };
      slice(seg.q, whole.q), slice(seg.k, whole.k), slice(seg.v, whole.v), slice(seg.n, whole.n);
      seg.forward(part ? state.data() : nullptr, state.data());  // state_in and state_out alias
      for (int b = 0; b < 2; ++b)
        std::copy_n(&seg.out[size_t(b) * len * C], size_t(len) * C, &out[(size_t(b) * T + t0) * C]);
    }
    rfa::test::check_close("out", out.data(), whole.out.data(), out.size(), 1e-12, 1e-13);
  }
}

TEST_CASE("rfa_delta: document boundaries equal the documents run one by one") {
  // Row 0: documents of 4, 5 and 4 tokens; row 1: a document begun before the row (3 tokens that
  // read the entering state), then one of 10. Chunks of 3 put boundaries inside and on chunks.
  const int T = 13;
  const std::vector<std::vector<int>> docs = {{4, 5, 4}, {-3, 10}};
  std::vector<uint8_t> starts(size_t(2) * T, 0);
  for (int b = 0; b < 2; ++b) {
    int t = 0;
    for (int len : docs[size_t(b)]) {
      if (len > 0) starts[size_t(b) * T + t] = 1;
      t += std::abs(len);
    }
  }
  RfaDeltaProblem<double> packed(rfa_delta_config(3), {2, T, 2, 4}, 41);
  packed.starts = starts.data();
  const std::vector<double> s_in = random_state(packed, 7);
  packed.forward(s_in.data());
  const int C = packed.d.C();
  const size_t per_row = s_in.size() / 2;
  for (int b = 0; b < 2; ++b) {
    int t0 = 0;
    for (int len : docs[size_t(b)]) {
      const int n = std::abs(len);
      RfaDeltaProblem<double> one(rfa_delta_config(3), {1, n, 2, 4}, 41);
      const std::pair<std::vector<double>*, const std::vector<double>*> inputs[] = {
          {&one.q, &packed.q}, {&one.k, &packed.k}, {&one.v, &packed.v}, {&one.n, &packed.n}};
      for (const auto& [dst, src] : inputs) std::copy_n(&(*src)[(size_t(b) * T + t0) * C], size_t(n) * C, dst->data());
      one.forward(len < 0 ? s_in.data() + b * per_row : nullptr);
      CAPTURE(b);
      CAPTURE(t0);
      rfa::test::check_close("document", &packed.out[(size_t(b) * T + t0) * C], one.out.data(), size_t(n) * C, 1e-12,
                             1e-13);
      t0 += n;
    }
  }
}

TEST_CASE("rfa_delta: the decoding step equals the forward at every position") {
  const int B = 3, T = 11, H = 2, Dh = 8, C = H * Dh;
  RfaDeltaProblem<float> p(rfa_delta_config(4), {B, T, H, Dh}, 51);
  p.forward();
  const int F = rfa_feature_count(p.cfg);
  std::vector<float> S(size_t(B) * H * F * Dh, 0.0f), scratch(size_t(B) * H * rfa_delta_step_scratch_size(p.cfg, Dh));
  std::vector<float> Wt(rfa_delta_constants_size(p.cfg, H, Dh));
  rfa_delta_constants_fill(Wt.data(), p.W.data(), p.cfg, H, Dh);
  // Rows listed in reverse order (state row 2 first): input row i moves state row 2 - i.
  const int order[B] = {2, 1, 0};
  std::vector<float> q(size_t(B) * C), k(q.size()), v(q.size()), n(q.size()), out(q.size());
  std::vector<int64_t> pos(B);
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < B; ++i) {
      const size_t src = (size_t(order[i]) * T + t) * C;
      std::copy_n(&p.q[src], C, &q[size_t(i) * C]);
      std::copy_n(&p.k[src], C, &k[size_t(i) * C]);
      std::copy_n(&p.v[src], C, &v[size_t(i) * C]);
      std::copy_n(&p.n[src], C, &n[size_t(i) * C]);
      pos[size_t(i)] = t;
    }
    rfa_delta_step(out.data(), S.data(), scratch.data(), RfaInputs<float>{q.data(), k.data(), v.data(), n.data()},
                   p.params(), Wt.data(), p.cfg, H, Dh, AttentionRows{B, order, pos.data()});
    CAPTURE(t);
    for (int i = 0; i < B; ++i)
      rfa::test::check_close("step", &out[size_t(i) * C], &p.out[(size_t(order[i]) * T + t) * C], size_t(C), 1e-5,
                             1e-6);
  }
}
