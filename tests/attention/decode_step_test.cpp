// The fused decode steps against their reference twins (rfa_step_reference,
// softmax_attention_step_reference), serial and threaded sizes alike.
#include <doctest/doctest.h>

#include <tuple>
#include <vector>

#include "attention/rfa_recurrent.h"
#include "attention/softmax_kv_cache.h"
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
  for (int t = 0; t < 6; ++t) {
    auto q = test::random_vector<T>(size_t(B) * C, 10 + t), k = test::random_vector<T>(size_t(B) * C, 20 + t);
    auto v = test::random_vector<T>(size_t(B) * C, 30 + t), n = test::random_vector<T>(size_t(B) * C, 40 + t);
    RfaInputs<T> in{q.data(), k.data(), v.data(), n.data()};
    rfa_step_reference(out_ref.data(), ref, in, p, c);
    rfa_decode_step(out_got.data(), got, in, p, Wt.data(), c);
    test::check_close("rfa out", out_got.data(), out_ref.data(), out_ref.size(), tol, tol);
    test::check_close("rfa state", got.S.data(), ref.S.data(), ref.S.size(), tol, tol);
  }
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
      check_rfa_step<double>(c, 2, 3, 8, 1e-11);
      check_rfa_step<float>(c, 2, 3, 8, 2e-4);
    }
  c.num_features = 64;  // B*H*(2D Dh + 2F E) above kParallelMinWork: threaded
  c.gated = true;
  c.feature_map = FeatureMapKind::gaussian;
  check_rfa_step<double>(c, 4, 8, 32, 1e-11);
}

TEST_CASE("decode step: softmax step equals softmax_attention_step_reference") {
  const int B = 2, H = 3, Dh = 8, C = H * Dh, L = 40;
  KvCache<double> ref = kv_cache_create<double>(B, H, Dh, L), got = kv_cache_create<double>(B, H, Dh, L);
  std::vector<double> out_ref(size_t(B) * C), out_got(out_ref.size());
  for (int t = 0; t < L; ++t) {
    auto q = test::random_vector<double>(size_t(B) * C, 100 + t), k = test::random_vector<double>(size_t(B) * C, 200 + t);
    auto v = test::random_vector<double>(size_t(B) * C, 300 + t);
    softmax_attention_step_reference(out_ref.data(), ref, q.data(), k.data(), v.data());
    softmax_decode_step(out_got.data(), got, q.data(), k.data(), v.data());
    test::check_close("softmax out", out_got.data(), out_ref.data(), out_ref.size(), 1e-12, 1e-12);
  }
  std::vector<double> z(size_t(B) * C);
  CHECK_THROWS_AS(softmax_decode_step(out_got.data(), got, z.data(), z.data(), z.data()), Error);
}
