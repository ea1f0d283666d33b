// The decode row kernels and fused attention steps against their reference
// twins (linear_forward, rmsnorm_forward, swiglu_forward, rope_forward,
// rfa_step, softmax_attention_step), serial and threaded sizes alike.
#include <doctest/doctest.h>

#include <tuple>
#include <vector>

#include "attention/rfa_recurrent.h"
#include "attention/softmax_kv_cache.h"
#include "core/error.h"
#include "decode/decode_kernels.h"
#include "decode/decode_step_attention.h"
#include "layers/linear.h"
#include "layers/rmsnorm.h"
#include "layers/swiglu.h"
#include "support/gradcheck.h"

using namespace rfa;

TEST_CASE("decode kernels: matvec, rmsnorm, swiglu, rope equal the layer kernels") {
  const int threads_before = thread_count();
  for (auto [B, IC, OC] : {std::tuple{1, 16, 7}, std::tuple{3, 40, 9}, std::tuple{2, 512, 1030}}) {
    INFO("B ", B, " IC ", IC, " OC ", OC);  // the last is a larger product
    auto x = test::random_vector<double>(size_t(B) * IC, 1);
    auto W = test::random_vector<double>(size_t(OC) * IC, 2);
    std::vector<double> ref(size_t(B) * OC), got(ref.size());
    linear_forward(ref.data(), x.data(), W.data(), B, IC, OC);
    matvec_forward(got.data(), x.data(), W.data(), B, IC, OC, false);
    test::check_close("matvec", got.data(), ref.data(), ref.size(), 1e-12, 1e-12);
    CHECK(thread_count() == threads_before);  // the serial scope restores the thread count
    auto base = test::random_vector<double>(ref.size(), 3);
    got = base;
    matvec_forward(got.data(), x.data(), W.data(), B, IC, OC, true);
    for (size_t i = 0; i < ref.size(); ++i) ref[i] += base[i];
    test::check_close("matvec accumulate", got.data(), ref.data(), ref.size(), 1e-12, 1e-12);
  }
  const int B = 3, C = 24, Hf = 20, H = 3, Dh = 8;
  auto x = test::random_vector<float>(size_t(B) * C, 4);
  auto w = test::random_vector<float>(C, 5);
  std::vector<float> ref(x.size()), got(x.size()), rstd(B);
  rmsnorm_forward(ref.data(), rstd.data(), x.data(), w.data(), B, C, 1e-5);
  rmsnorm_rows(got.data(), x.data(), w.data(), B, C, 1e-5);
  test::check_close("rmsnorm", got.data(), ref.data(), ref.size(), 1e-6, 1e-7);
  auto gu = test::random_vector<float>(size_t(B) * 2 * Hf, 6);
  std::vector<float> sref(size_t(B) * Hf), sgot(sref.size());
  swiglu_forward(sref.data(), gu.data(), B, Hf);
  swiglu_rows(sgot.data(), gu.data(), B, Hf);
  test::check_close("swiglu", sgot.data(), sref.data(), sref.size(), 1e-6, 1e-7);
  RopeTable table = RopeTable::build(20, Dh);
  std::vector<float> rref(x.size());
  rope_forward(rref.data(), x.data(), table, B, 1, H, Dh, 17);
  std::vector<float> rgot = x;
  rope_rows(rgot.data(), table, B, H, Dh, 17);
  test::check_close("rope", rgot.data(), rref.data(), rref.size(), 1e-6, 1e-7);
}

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
    rfa_step(out_ref.data(), ref, in, p, c);
    rfa_decode_step(out_got.data(), got, in, p, Wt.data(), c);
    test::check_close("rfa out", out_got.data(), out_ref.data(), out_ref.size(), tol, tol);
    test::check_close("rfa state", got.S.data(), ref.S.data(), ref.S.size(), tol, tol);
  }
}

}  // namespace

TEST_CASE("decode kernels: fused rfa step equals rfa_step") {
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

TEST_CASE("decode kernels: softmax step equals softmax_attention_step") {
  const int B = 2, H = 3, Dh = 8, C = H * Dh, L = 40;
  KvCache<double> ref = kv_cache_create<double>(B, H, Dh, L), got = kv_cache_create<double>(B, H, Dh, L);
  std::vector<double> out_ref(size_t(B) * C), out_got(out_ref.size());
  for (int t = 0; t < L; ++t) {
    auto q = test::random_vector<double>(size_t(B) * C, 100 + t), k = test::random_vector<double>(size_t(B) * C, 200 + t);
    auto v = test::random_vector<double>(size_t(B) * C, 300 + t);
    softmax_attention_step(out_ref.data(), ref, q.data(), k.data(), v.data());
    softmax_decode_step(out_got.data(), got, q.data(), k.data(), v.data());
    test::check_close("softmax out", out_got.data(), out_ref.data(), out_ref.size(), 1e-12, 1e-12);
  }
  std::vector<double> z(size_t(B) * C);
  CHECK_THROWS_AS(softmax_decode_step(out_got.data(), got, z.data(), z.data(), z.data()), Error);
}
