#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attention/softmax_attention.h"
#include "attention/softmax_kv_cache.h"
#include "core/error.h"
#include "core/parallel.h"
#include "support/gradcheck.h"

using namespace rfa;
using rfa::test::random_vector;

namespace {

// Plain reference twin: causal softmax attention, one (b, h, i) at a time, in double.
std::vector<double> softmax_reference(const std::vector<double>& q, const std::vector<double>& k,
                                      const std::vector<double>& v, const AttentionDims& d) {
  const int C = d.C();
  std::vector<double> out(q.size(), 0.0), s(d.T);
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.H; ++h)
      for (int i = 0; i < d.T; ++i) {
        auto at = [&](int t, int e) { return (size_t(b) * d.T + t) * C + size_t(h) * d.Dh + e; };
        double max = -1e300, sum = 0;
        for (int j = 0; j <= i; ++j) {
          s[j] = 0;
          for (int e = 0; e < d.Dh; ++e) s[j] += q[at(i, e)] * k[at(j, e)];
          s[j] /= std::sqrt(double(d.Dh));
          max = std::max(max, s[j]);
        }
        for (int j = 0; j <= i; ++j) sum += (s[j] = std::exp(s[j] - max));
        for (int j = 0; j <= i; ++j)
          for (int e = 0; e < d.Dh; ++e) out[at(i, e)] += s[j] / sum * v[at(j, e)];
      }
  return out;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& x) {
  return std::vector<T>(x.begin(), x.end());
}

}  // namespace

TEST_CASE("softmax attention: float and double forward match the plain reference") {
  AttentionDims d{3, 37, 2, 16};
  const size_t n = size_t(d.B) * d.T * d.C();
  auto q = random_vector<double>(n, 1, 1.5), k = random_vector<double>(n, 2, 1.5), v = random_vector<double>(n, 3);
  auto ref = softmax_reference(q, k, v, d);
  std::vector<double> ws(softmax_attention_workspace_size(d, thread_count()));
  std::vector<double> probs(softmax_attention_saved_size(d)), out(n);
  softmax_attention_forward(out.data(), probs.data(), Workspace<double>{ws.data(), ws.size()}, q.data(), k.data(),
                            v.data(), d);
  rfa::test::check_close("double forward", out.data(), ref.data(), n, 1e-12, 1e-12);
  auto qf = cast<float>(q), kf = cast<float>(k), vf = cast<float>(v);
  std::vector<float> wsf(ws.size()), probsf(probs.size()), outf(n);
  softmax_attention_forward(outf.data(), probsf.data(), Workspace<float>{wsf.data(), wsf.size()}, qf.data(),
                            kf.data(), vf.data(), d);
  rfa::test::check_close("float forward", outf.data(), ref.data(), n, 1e-5, 1e-5);
}

TEST_CASE("softmax attention: backward matches central differences") {
  AttentionDims d{2, 7, 2, 4};
  const size_t n = size_t(d.B) * d.T * d.C();
  auto q = random_vector<double>(n, 11), k = random_vector<double>(n, 12), v = random_vector<double>(n, 13);
  auto R = random_vector<double>(n, 14);
  std::vector<double> ws(softmax_attention_workspace_size(d, thread_count())), probs(softmax_attention_saved_size(d));
  std::vector<double> out(n);
  auto loss = [&] {
    softmax_attention_forward(out.data(), probs.data(), Workspace<double>{ws.data(), ws.size()}, q.data(), k.data(),
                              v.data(), d);
    return rfa::test::weighted_sum(out.data(), R.data(), n);
  };
  loss();
  // Backward overwrites: start from stale non-zero gradients, which must not leak through.
  std::vector<double> dq(n, 0.25), dk(n, 0.25), dv(n, 0.25);
  softmax_attention_backward(dq.data(), dk.data(), dv.data(), Workspace<double>{ws.data(), ws.size()}, R.data(),
                             probs.data(), q.data(), k.data(), v.data(), d);
  rfa::test::GradCheckTolerance tol{1e-6, 1e-6, 1e-9};
  rfa::test::check_gradient("q", q.data(), dq.data(), n, loss, tol);
  rfa::test::check_gradient("k", k.data(), dk.data(), n, loss, tol);
  rfa::test::check_gradient("v", v.data(), dv.data(), n, loss, tol);
}

TEST_CASE("softmax attention: KV-cache decoding equals the full forward") {
  AttentionDims d{2, 23, 3, 8};
  const int C = d.C();
  const size_t n = size_t(d.B) * d.T * C;
  auto q = random_vector<float>(n, 21), k = random_vector<float>(n, 22), v = random_vector<float>(n, 23);
  std::vector<float> ws(softmax_attention_workspace_size(d, thread_count())), probs(softmax_attention_saved_size(d));
  std::vector<float> full(n), stepped(n);
  softmax_attention_forward(full.data(), probs.data(), Workspace<float>{ws.data(), ws.size()}, q.data(), k.data(),
                            v.data(), d);
  auto cache = kv_cache_create<float>(d.B, d.H, d.Dh, d.T);
  std::vector<float> qt(size_t(d.B) * C), kt(qt.size()), vt(qt.size()), ot(qt.size());
  for (int t = 0; t < d.T; ++t) {
    for (int b = 0; b < d.B; ++b)
      for (int c = 0; c < C; ++c) {
        size_t src = (size_t(b) * d.T + t) * C + c;
        qt[size_t(b) * C + c] = q[src], kt[size_t(b) * C + c] = k[src], vt[size_t(b) * C + c] = v[src];
      }
    softmax_attention_step_reference(ot.data(), cache, qt.data(), kt.data(), vt.data());
    for (int b = 0; b < d.B; ++b)
      for (int c = 0; c < C; ++c) stepped[(size_t(b) * d.T + t) * C + c] = ot[size_t(b) * C + c];
  }
  CHECK(cache.len == d.T);
  rfa::test::check_close("decode vs forward", stepped.data(), full.data(), n, 1e-5, 1e-6);
  CHECK_THROWS_AS(softmax_attention_step_reference(ot.data(), cache, qt.data(), kt.data(), vt.data()), rfa::Error);
  kv_cache_reset(cache);
  CHECK(cache.len == 0);
}
