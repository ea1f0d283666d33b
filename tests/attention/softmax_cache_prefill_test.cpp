// Softmax with a ring KV cache (a window of the last W positions), against a
// reference that keeps every key and recomputes attention over the last W
// positions explicitly: the decode step (softmax_decode_step.cpp) and the
// prefill (softmax_cache_prefill.cpp), well past the window, with prompts
// longer than the window, in any segmentation. The linear cache's prefill is
// covered by decoder_test.cpp against the training forward.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "attention/softmax_kv_cache.h"
#include "attention/softmax_cache_prefill.h"
#include "support/gradcheck.h"

using namespace rfa;

namespace {

constexpr int kB = 2, kH = 3, kDh = 8, kC = kH * kDh;

// q, k, v for positions 0..T-1, (T, B, C): position-major so one position is a (B, C) step input.
struct Stream {
  int T;
  std::vector<double> q, k, v;
  explicit Stream(int T_len)
      : T(T_len),
        q(test::random_vector<double>(size_t(T_len) * kB * kC, 11)),
        k(test::random_vector<double>(size_t(T_len) * kB * kC, 12)),
        v(test::random_vector<double>(size_t(T_len) * kB * kC, 13)) {}
  const double* at(const std::vector<double>& x, int t) const { return x.data() + size_t(t) * kB * kC; }
  // (B, S, C) rows t0 .. t0+S-1 of x, the layout prefill takes.
  std::vector<double> segment(const std::vector<double>& x, int t0, int S) const {
    std::vector<double> out(size_t(kB) * S * kC);
    for (int b = 0; b < kB; ++b)
      for (int t = 0; t < S; ++t)
        std::copy_n(at(x, t0 + t) + size_t(b) * kC, kC, out.begin() + (size_t(b) * S + t) * kC);
    return out;
  }
};

// out (T, B, C): position t attends over positions max(0, t-W+1) .. t (W = 0: all of 0..t).
std::vector<double> window_reference(const Stream& s, int W) {
  std::vector<double> out(size_t(s.T) * kB * kC, 0.0);
  for (int t = 0; t < s.T; ++t)
    for (int b = 0; b < kB; ++b)
      for (int h = 0; h < kH; ++h) {
        const size_t off = size_t(b) * kC + size_t(h) * kDh;
        const int first = W > 0 ? std::max(0, t - W + 1) : 0;
        std::vector<double> p;
        for (int j = first; j <= t; ++j) {
          double d = 0;
          for (int e = 0; e < kDh; ++e) d += s.at(s.q, t)[off + e] * s.at(s.k, j)[off + e];
          p.push_back(d / std::sqrt(double(kDh)));
        }
        const double mx = *std::max_element(p.begin(), p.end());
        double sum = 0;
        for (double& x : p) sum += (x = std::exp(x - mx));
        double* o = out.data() + size_t(t) * kB * kC + off;
        for (int j = first; j <= t; ++j)
          for (int e = 0; e < kDh; ++e) o[e] += p[size_t(j - first)] / sum * s.at(s.v, j)[off + e];
      }
  return out;
}

// Prefills positions 0..prefill-1 in segments of `segment`, then steps to T. Returns out (T, B, C).
std::vector<double> ring_decode(const Stream& s, int W, int prefill, int segment) {
  KvCache<double> cache = kv_cache_create<double>(kB, kH, kDh, W, true);
  std::vector<double> scores(softmax_cache_prefill_scratch(segment, W, true));
  std::vector<double> out(size_t(s.T) * kB * kC);
  for (int t0 = 0; t0 < prefill; t0 += segment) {
    const int S = std::min(segment, prefill - t0);
    const auto q = s.segment(s.q, t0, S), k = s.segment(s.k, t0, S), v = s.segment(s.v, t0, S);
    std::vector<double> o(q.size());
    const std::vector<int64_t> len(size_t(kB), cache.len);
    softmax_cache_prefill(o.data(), cache.view(), Workspace<double>{scores.data(), scores.size()}, q.data(), k.data(),
                          v.data(), S, len.data());
    cache.len += S;
    for (int b = 0; b < kB; ++b)
      for (int t = 0; t < S; ++t)
        std::copy_n(o.begin() + (size_t(b) * S + t) * kC, kC, out.begin() + (size_t(t0 + t) * kB + b) * kC);
  }
  for (int t = prefill; t < s.T; ++t) {
    const std::vector<int64_t> pos(size_t(kB), t);
    softmax_decode_step(out.data() + size_t(t) * kB * kC, cache.view(), s.at(s.q, t), s.at(s.k, t), s.at(s.v, t),
                        AttentionRows{kB, nullptr, pos.data()});
    ++cache.len;
  }
  CHECK(cache.len == s.T);
  return out;
}

}  // namespace

TEST_CASE("softmax ring cache: each step attends over exactly the last W positions") {
  const Stream s(31);  // six times around a window of 5
  for (int W : {1, 5, 8}) {
    INFO("window ", W);
    const std::vector<double> ref = window_reference(s, W);
    const std::vector<double> got = ring_decode(s, W, 0, 1);
    test::check_close("ring step vs last-W reference", got.data(), ref.data(), ref.size(), 1e-12, 1e-12);
  }
  // The test would be vacuous if the window did not change the output.
  const std::vector<double> full = window_reference(s, 0), w5 = window_reference(s, 5);
  double diff = 0;
  for (size_t i = 0; i < full.size(); ++i) diff = std::max(diff, std::abs(full[i] - w5[i]));
  CHECK(diff > 1e-2);
}

TEST_CASE("softmax ring cache: a prefill longer than the window equals stepping it token by token") {
  const Stream s(29);
  const int W = 5;
  const std::vector<double> steps = ring_decode(s, W, 0, 1);
  for (int prefill : {3, 5, 12, 29})
    for (int segment : {1, 2, 5, 7, 29}) {
      INFO("prefill ", prefill, " in segments of ", segment, ", then steps");
      const std::vector<double> got = ring_decode(s, W, prefill, segment);
      test::check_close("ring prefill vs steps", got.data(), steps.data(), steps.size(), 1e-12, 1e-12);
    }
}

TEST_CASE("softmax ring cache: a window wider than the text is the whole history") {
  const Stream s(9);
  const std::vector<double> full = window_reference(s, 0);
  const std::vector<double> got = ring_decode(s, 16, 6, 4);
  test::check_close("wide ring vs full attention", got.data(), full.data(), full.size(), 1e-12, 1e-12);
}
