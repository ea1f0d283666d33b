// The fused decode steps against their reference twins (rfa_step_reference,
// softmax_attention_step_reference), serial and threaded sizes alike.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "attention/rfa_layout.h"
#include "attention/rfa_recurrent.h"
#include "attention/softmax_kv_cache.h"
#include "kernels/simd.h"
#include "core/error.h"
#include "support/gradcheck.h"

using namespace rfa;

namespace {

template <typename T>
void check_rfa_step(const RfaConfig& c, int B, int H, int Dh, double tol) {
  const int C = H * Dh, D = c.num_features;
  auto sigma = test::random_vector<T>(size_t(H) * Dh, 1, 0.3);
  for (auto& s : sigma) s += T(1);
  auto gate_w = test::random_vector<T>(size_t(H) * C, 2, 0.3);
  auto gate_b = test::random_vector<T>(H, 3);
  auto W = test::random_vector<T>(size_t(H) * D * Dh, 4);
  RfaParams<T> p{sigma.data(), gate_w.data(), gate_b.data(), W.data()};
  std::vector<T> Wt(W.size());
  rfa_random_transpose(Wt.data(), W.data(), H, D, Dh);
  RfaState<T> ref = rfa_state_create<T>(c, B, H, Dh), got = rfa_state_create<T>(c, B, H, Dh);
  std::vector<T> out_ref(size_t(B) * C), out_got(out_ref.size());
  const std::vector<int64_t> pos(size_t(B), 0);
  for (int t = 0; t < 6; ++t) {
    auto q = test::random_vector<T>(size_t(B) * C, 10 + t), k = test::random_vector<T>(size_t(B) * C, 20 + t);
    auto v = test::random_vector<T>(size_t(B) * C, 30 + t), n = test::random_vector<T>(size_t(B) * C, 40 + t);
    RfaInputs<T> in{q.data(), k.data(), v.data(), n.data()};
    rfa_step_reference(out_ref.data(), ref, in, p, c);
    rfa_decode_step(out_got.data(), got.view(), in, p, Wt.data(), c, AttentionRows{B, nullptr, pos.data()});
    test::check_close("rfa out", out_got.data(), out_ref.data(), out_ref.size(), tol, tol);
    test::check_close("rfa state", got.S.data(), ref.S.data(), ref.S.size(), tol, tol);
  }
  // The listed rows only, in another order: input row i moves state row rows[i]; the rest stay.
  if (B < 2) return;
  const std::vector<T> before = got.S;
  const int rows[] = {B - 1, 0};  // the last row and the first
  std::vector<T> qs(size_t(2) * C), ks(qs.size()), vs(qs.size()), ns(qs.size()), out2(qs.size());
  auto q = test::random_vector<T>(size_t(B) * C, 50), k = test::random_vector<T>(size_t(B) * C, 51);
  auto v = test::random_vector<T>(size_t(B) * C, 52), n = test::random_vector<T>(size_t(B) * C, 53);
  for (int i = 0; i < 2; ++i)
    for (int x = 0; x < C; ++x) {
      const size_t from = size_t(rows[i]) * C + x, to = size_t(i) * C + x;
      qs[to] = q[from], ks[to] = k[from], vs[to] = v[from], ns[to] = n[from];
    }
  rfa_step_reference(out_ref.data(), ref, RfaInputs<T>{q.data(), k.data(), v.data(), n.data()}, p, c);
  rfa_decode_step(out2.data(), got.view(), RfaInputs<T>{qs.data(), ks.data(), vs.data(), ns.data()}, p, Wt.data(), c,
                  AttentionRows{2, rows, pos.data()});
  const size_t per_row = size_t(H) * rfa_feature_count(c) * (Dh + 1);
  for (int i = 0; i < 2; ++i) {
    test::check_close("rfa listed row out", out2.data() + size_t(i) * C, out_ref.data() + size_t(rows[i]) * C, C, tol,
                      tol);
    test::check_close("rfa listed row state", got.S.data() + size_t(rows[i]) * per_row,
                      ref.S.data() + size_t(rows[i]) * per_row, per_row, tol, tol);
  }
  for (int b = 1; b + 1 < B; ++b)  // idle rows: untouched
    CHECK(std::equal(got.S.begin() + b * per_row, got.S.begin() + (b + 1) * per_row, before.begin() + b * per_row));
}

// The fused step against the reference in double (to 1e-11) and in float (2e-4).
void check_rfa_step_both(const RfaConfig& c, int B, int H, int Dh) {
  check_rfa_step<double>(c, B, H, Dh, 1e-11);
  check_rfa_step<float>(c, B, H, Dh, 2e-4);
}

}  // namespace

TEST_CASE("decode step: fused rfa step equals rfa_step_reference") {
  RfaConfig c;
  c.num_features = 6;
  c.eps_d = 1e-6;
  for (bool gated : {true, false})
    for (FeatureMapKind map : {FeatureMapKind::gaussian, FeatureMapKind::arccos}) {
      INFO("gated ", gated, " map ", int(map));
      c.gated = gated;
      c.feature_map = map;
      check_rfa_step_both(c, 2, 3, 8);
    }
  c.num_features = 64;  // B*H*(2D Dh + 2F E) above kParallelMinWork: threaded
  c.gated = true;
  c.feature_map = FeatureMapKind::gaussian;
  check_rfa_step<double>(c, 4, 8, 32, 1e-11);
}

TEST_CASE("decode step: the state pass at each kind of tail (E = Dh + 1 past whole registers)") {
  // E 16: no tail on any target (16, 8 or 4 lanes); E 33: a tail of one (the denominator's
  // column), its accumulator a register; E 21: a tail of 5 (16 and 8 lanes) counted at run time.
  RfaConfig c;
  c.num_features = 16;
  c.eps_d = 1e-6;
  for (int Dh : {15, 32, 20}) {
    INFO("Dh ", Dh);
    check_rfa_step_both(c, 3, 2, Dh);
  }
}

TEST_CASE("decode step: the q and k projections at every register count (D a multiple of the width or not)") {
  // D of 1, 2, 4 and 8 float registers: the pair's accumulators in registers, in one block, or
  // in two (6 and 2) where 8 registers' pairs would not fit 16 vector registers (AVX2, SSE);
  // D = 1.5 registers + 1 (25, 13 or 7 floats): the plain loop. Both maps; double too.
  constexpr int kW = Simd<float>::W;
  RfaConfig c;
  c.eps_d = 1e-6;
  for (int D : {kW, 2 * kW, 4 * kW, 8 * kW, kW + kW / 2 + 1})
    for (FeatureMapKind map : {FeatureMapKind::gaussian, FeatureMapKind::arccos}) {
      INFO("D ", D, " map ", int(map));
      c.num_features = D;
      c.feature_map = map;
      check_rfa_step_both(c, 2, 2, 12);
    }
}

TEST_CASE("decode step: a token's scalar gate is the chunked forward's, bit for bit") {
  // gate_sigmoids (the decode step) against gate_rows (the chunked forward), over pre-activations
  // from deep in either tail (exp_of's clamps) to 0; and both near the stable libm form.
  std::vector<float> a;
  for (float x = -95.0f; x <= 95.0f; x += 0.37f) a.push_back(x);
  a.push_back(0.0f);
  const int n = int(a.size());
  std::vector<float> g(n), beta(n), eG(n);
  gate_rows(g.data(), beta.data(), eG.data(), a.data(), n);
  int differ = 0;
  for (int i = 0; i < n; ++i) {
    float gi, bi;
    gate_sigmoids(a[i], gi, bi);
    differ += gi != g[i] || bi != beta[i];
    const GateValues<double> exact = gate_values(double(a[i]));
    CHECK(std::abs(gi - exact.g) <= 1e-6 * exact.g + 1e-37);
    CHECK(std::abs(bi - exact.beta) <= 1e-6 * exact.beta + 1e-37);
  }
  CHECK(differ == 0);
}

TEST_CASE("decode step: softmax step equals softmax_attention_step_reference") {
  const int B = 2, H = 3, Dh = 8, C = H * Dh, L = 40;
  KvCache<double> ref = kv_cache_create<double>(B, H, Dh, L), got = kv_cache_create<double>(B, H, Dh, L);
  std::vector<double> out_ref(size_t(B) * C), out_got(out_ref.size());
  std::vector<int64_t> pos(static_cast<size_t>(B));
  for (int t = 0; t < L; ++t) {
    auto q = test::random_vector<double>(size_t(B) * C, 100 + t), k = test::random_vector<double>(size_t(B) * C, 200 + t);
    auto v = test::random_vector<double>(size_t(B) * C, 300 + t);
    softmax_attention_step_reference(out_ref.data(), ref, q.data(), k.data(), v.data());
    std::fill(pos.begin(), pos.end(), t);
    softmax_decode_step(out_got.data(), got.view(), q.data(), k.data(), v.data(), AttentionRows{B, nullptr, pos.data()});
    test::check_close("softmax out", out_got.data(), out_ref.data(), out_ref.size(), 1e-12, 1e-12);
  }
  std::vector<double> z(size_t(B) * C);
  std::fill(pos.begin(), pos.end(), L);
  CHECK_THROWS_AS(softmax_decode_step(out_got.data(), got.view(), z.data(), z.data(), z.data(),
                                      AttentionRows{B, nullptr, pos.data()}),
                  Error);
}

TEST_CASE("decode step: softmax's weighted value rows in registers keep axpy's sums, at every register count") {
  // Dh of a half, one, two and three registers plus tails (float, this build's width): each step's
  // output equals the plain loop the step ran before (a dot per slot, then o += p_j v_j by axpy into
  // memory) bit for bit, and the reference within float rounding.
  constexpr int kW = Simd<float>::W;
  for (int Dh : {kW / 2, kW, 2 * kW + 3, 3 * kW, kW + kW / 2 + 1}) {
    INFO("Dh ", Dh);
    const int B = 2, H = 2, C = H * Dh, L = 37;
    KvCache<float> ref = kv_cache_create<float>(B, H, Dh, L), got = kv_cache_create<float>(B, H, Dh, L);
    std::vector<float> out_ref(size_t(B) * C), out_got(out_ref.size()), plain(out_ref.size()), s(L);
    std::vector<int64_t> pos(static_cast<size_t>(B));
    int differ = 0;
    for (int t = 0; t < L; ++t) {
      const size_t n = size_t(B) * C;
      auto q = test::random_vector<float>(n, 400 + t), k = test::random_vector<float>(n, 500 + t);
      auto v = test::random_vector<float>(n, 600 + t);
      softmax_attention_step_reference(out_ref.data(), ref, q.data(), k.data(), v.data());
      std::fill(pos.begin(), pos.end(), t);
      softmax_decode_step(out_got.data(), got.view(), q.data(), k.data(), v.data(),
                          AttentionRows{B, nullptr, pos.data()});
      test::check_close("softmax out", out_got.data(), out_ref.data(), out_ref.size(), 1e-5, 1e-6);
      const float scale = 1.0f / std::sqrt(float(Dh));
      for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h) {  // the step's cache after it: slots 0..t of this (b, h)
          const float* kc = got.k.data() + (size_t(b) * H + h) * L * Dh;
          const float* vc = got.v.data() + (size_t(b) * H + h) * L * Dh;
          const float* qr = q.data() + size_t(b) * C + size_t(h) * Dh;
          for (int j = 0; j <= t; ++j) s[size_t(j)] = scale * dot(qr, kc + size_t(j) * Dh, Dh);
          const float max = row_max(s.data(), t + 1);
          for (int j = 0; j <= t; ++j) s[size_t(j)] -= max;
          exp_row(s.data(), t + 1);
          const float inv = 1.0f / row_sum(s.data(), t + 1);
          float* o = plain.data() + size_t(b) * C + size_t(h) * Dh;
          std::fill(o, o + Dh, 0.0f);
          for (int j = 0; j <= t; ++j) axpy(o, s[size_t(j)] * inv, vc + size_t(j) * Dh, Dh);
        }
      for (size_t i = 0; i < plain.size(); ++i) differ += plain[i] != out_got[i];
    }
    CHECK(differ == 0);
  }
}
