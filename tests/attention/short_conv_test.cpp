// The short causal depthwise convolution on q, k, v (attention/short_conv.h): the forward
// against a plain reference, the backward against central differences in double, segments
// with the history carried (odd lengths, shorter than the kernel too) equal to one pass, and
// the one-token step equal to the full forward at every position, rows in any order (bit for bit
// where the channels fill vector registers and a tail).
#include <doctest/doctest.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "attention/attention_spec.h"
#include "attention/short_conv.h"
#include "support/gradcheck.h"

using namespace rfa;
using test::check_close;
using test::random_vector;

namespace {

AttentionSpec spec_of(int K, int H = 2, int Dh = 3) {
  AttentionConfig a;
  a.kind = AttentionKind::softmax;
  a.short_conv = K;
  return attention_spec_make(a, H, Dh);
}

// y[i][b, t, c] = sum_j w[i][j, c] x[i][b, t - j, c], x before t = 0 from hist (B, 3, K-1, C) or 0.
std::vector<double> reference(const AttentionSpec& s, const std::vector<double>& w, const std::vector<double>& x,
                              const std::vector<double>* hist, int B, int T) {
  const int K = s.short_conv, C = s.C();
  std::vector<double> y(x.size());
  for (int i = 0; i < 3; ++i)
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < C; ++c) {
          double acc = 0;
          for (int j = 0; j < K; ++j) {
            const int u = t - j;
            const double xv = u >= 0 ? x[((size_t(i) * B + b) * T + u) * C + c]
                              : hist ? (*hist)[((size_t(b) * 3 + i) * (K - 1) + (K - 1 + u)) * C + c]
                                     : 0.0;
            acc += w[(size_t(i) * K + j) * C + c] * xv;  // w (3, K, C)
          }
          y[((size_t(i) * B + b) * T + t) * C + c] = acc;
        }
  return y;
}

// Runs the convolution over xs (3, B, T, C) in place; ext sized here.
template <typename T>
void apply(const AttentionSpec& s, const std::vector<T>& w, std::vector<T>& xs, int B, int Tn,
           const std::type_identity_t<T>* hist_in, std::type_identity_t<T>* hist_out, std::vector<T>& ext) {
  ext.assign(size_t(short_conv_ext_size(s, B, Tn)), T(0));
  ShortConvCall<T> call;
  const size_t C = size_t(s.C()), K = size_t(s.short_conv);
  for (int i = 0; i < 3; ++i) {
    call.w[i] = w.data() + i * C * K;
    call.x[i] = xs.data() + size_t(i) * B * Tn * C;
  }
  call.B = B;
  call.T_len = Tn;
  call.ext = ext.data();
  call.hist_in = hist_in;
  call.hist_out = hist_out;
  call.hist_stride = short_conv_history_size(s);
  short_conv_apply(s, call);
}

// One token of every row through short_conv_apply_step: row order[r] (r itself where order is
// null) of xs (3, B, Tn, C) at position t, listed as row r. Returns q, k, v's outputs (3, B, C).
template <typename T>
std::vector<T> step_token(const AttentionSpec& s, const T* const cw[3], const std::vector<T>& xs, std::vector<T>& hist,
                          int B, int Tn, int t, const int* order) {
  const size_t C = size_t(s.C());
  std::vector<T> tok(3 * size_t(B) * C);
  for (int i = 0; i < 3; ++i)
    for (int r = 0; r < B; ++r)
      std::copy_n(xs.data() + ((size_t(i) * B + size_t(order ? order[r] : r)) * Tn + t) * C, C,
                  tok.data() + (size_t(i) * B + r) * C);
  T* x[3] = {tok.data(), tok.data() + size_t(B) * C, tok.data() + 2 * size_t(B) * C};
  const std::vector<int64_t> pos(size_t(B), t);
  short_conv_apply_step(s, cw, x, hist.data(), short_conv_history_size(s), AttentionRows{B, order, pos.data()});
  return tok;
}

}  // namespace

TEST_CASE("short conv: the forward is the causal depthwise sum, the history before t = 0, zeros without one") {
  for (int K : {1, 2, 4}) {
    const AttentionSpec s = spec_of(K);
    const int B = 2, T = 5, C = s.C();
    const auto w = random_vector<double>(size_t(3) * C * K, 1);
    const auto x = random_vector<double>(size_t(3) * B * T * C, 2);
    const auto hist = random_vector<double>(size_t(B) * short_conv_history_size(s), 3);
    for (bool with_history : {false, true}) {
      std::vector<double> y = x, ext;
      apply(s, w, y, B, T, with_history ? hist.data() : nullptr, nullptr, ext);
      const std::vector<double> want = reference(s, w, x, with_history ? &hist : nullptr, B, T);
      check_close("y", y.data(), want.data(), y.size(), 1e-14, 1e-14);
    }
  }
}

TEST_CASE("short conv: the identity at init (first tap 1, the others 0) leaves q, k, v as they were") {
  const AttentionSpec s = spec_of(4);
  const int B = 2, T = 6, C = s.C(), K = 4;
  std::vector<float> w(size_t(3) * C * K, 0.0f);  // (3, K, C): tap 0 all ones
  for (int i = 0; i < 3; ++i) std::fill_n(w.begin() + i * K * C, C, 1.0f);
  const auto x = random_vector<float>(size_t(3) * B * T * C, 4);
  const auto hist = random_vector<float>(size_t(B) * short_conv_history_size(s), 5);
  std::vector<float> y = x, ext;
  apply(s, w, y, B, T, hist.data(), nullptr, ext);
  CHECK(y == x);  // bit for bit
}

TEST_CASE("short conv: the backward matches central differences (double), with a history, T below and above K") {
  for (int K : {1, 2, 4})
    for (int T : {1, 2, 7}) {
      CAPTURE(K);
      CAPTURE(T);
      const AttentionSpec s = spec_of(K);
      const int B = 2, C = s.C();
      auto w = random_vector<double>(size_t(3) * C * K, 10 + K);
      auto x = random_vector<double>(size_t(3) * B * T * C, 20 + T);
      const auto hist = random_vector<double>(size_t(B) * short_conv_history_size(s), 30);
      const auto R = random_vector<double>(x.size(), 40);
      std::vector<double> ext;
      auto loss = [&] {
        std::vector<double> y = x, e;
        apply(s, w, y, B, T, hist.data(), nullptr, e);
        return test::weighted_sum(y.data(), R.data(), y.size());
      };
      std::vector<double> y = x;
      apply(s, w, y, B, T, hist.data(), nullptr, ext);  // ext: what the training forward saves
      std::vector<double> dx = R, dw(w.size(), 0.5);    // dw is added into: starts at 0.5
      const double* cw[3] = {w.data(), w.data() + size_t(C) * K, w.data() + 2 * size_t(C) * K};
      double* cdw[3] = {dw.data(), dw.data() + size_t(C) * K, dw.data() + 2 * size_t(C) * K};
      double* cdx[3] = {dx.data(), dx.data() + size_t(B) * T * C, dx.data() + 2 * size_t(B) * T * C};
      short_conv_apply_backward(s, cw, cdw, cdx, ext.data(), B, T);
      for (double& v : dw) v -= 0.5;
      test::GradCheckTolerance tol;
      tol.eps = 1e-3;  // the loss is linear in x and in w: no truncation error, rounding ~1e-13
      tol.rtol = 1e-8;
      tol.atol = 1e-10;
      test::check_gradient("dx", x.data(), dx.data(), x.size(), loss, tol);
      test::check_gradient("dw", w.data(), dw.data(), w.size(), loss, tol);
    }
}

TEST_CASE("short conv: segments with the history carried equal one pass (odd lengths, segments shorter than K)") {
  for (int K : {2, 4, 5}) {
    CAPTURE(K);
    const AttentionSpec s = spec_of(K);
    const int B = 3, T = 13, C = s.C();
    const auto w = random_vector<float>(size_t(3) * C * K, 50);
    const auto x = random_vector<float>(size_t(3) * B * T * C, 51);
    std::vector<float> whole = x, ext;
    apply(s, w, whole, B, T, static_cast<const float*>(nullptr), nullptr, ext);
    for (const std::vector<int>& cuts : std::vector<std::vector<int>>{{1, 1, 11}, {3, 5, 5}, {7, 6}, {2, 1, 3, 7}}) {
      std::vector<float> hist(size_t(B) * short_conv_history_size(s), 0.0f);  // in and out alias
      std::vector<float> got(x.size());
      int t0 = 0;
      bool first = true;
      for (int n : cuts) {
        std::vector<float> seg(size_t(3) * B * n * C);  // (3, B, n, C) of the segment
        for (int i = 0; i < 3; ++i)
          for (int b = 0; b < B; ++b)
            for (int t = 0; t < n; ++t)
              for (int c = 0; c < C; ++c)
                seg[((size_t(i) * B + b) * n + t) * C + c] = x[((size_t(i) * B + b) * T + t0 + t) * C + c];
        apply(s, w, seg, B, n, first ? nullptr : hist.data(), hist.data(), ext);
        for (int i = 0; i < 3; ++i)
          for (int b = 0; b < B; ++b)
            for (int t = 0; t < n; ++t)
              for (int c = 0; c < C; ++c)
                got[((size_t(i) * B + b) * T + t0 + t) * C + c] = seg[((size_t(i) * B + b) * n + t) * C + c];
        t0 += n;
        first = false;
      }
      REQUIRE(t0 == T);
      check_close("segments", got.data(), whole.data(), got.size(), 1e-6, 1e-6);
    }
  }
}

TEST_CASE("short conv: one token at a time equals the full forward at every position, rows in any order") {
  const AttentionSpec s = spec_of(4);
  const int B = 3, T = 9, C = s.C(), K = 4;
  const auto w = random_vector<float>(size_t(3) * C * K, 60);
  const auto x = random_vector<float>(size_t(3) * B * T * C, 61);
  std::vector<float> whole = x, ext;
  apply(s, w, whole, B, T, static_cast<const float*>(nullptr), nullptr, ext);
  std::vector<float> hist(size_t(B) * short_conv_history_size(s), 0.0f);
  const float* cw[3] = {w.data(), w.data() + size_t(C) * K, w.data() + 2 * size_t(C) * K};
  const int order[B] = {2, 0, 1};  // listed row r is state row order[r]
  for (int t = 0; t < T; ++t) {
    const std::vector<float> tok = step_token(s, cw, x, hist, B, T, t, order);  // (3, n, C): listed rows
    for (int i = 0; i < 3; ++i)
      for (int r = 0; r < B; ++r)
        for (int c = 0; c < C; ++c)
          CHECK(tok[(size_t(i) * B + r) * C + c] ==
                doctest::Approx(whole[((size_t(i) * B + order[r]) * T + t) * C + c]).epsilon(1e-6));
  }
}

// C = 4 x 9 = 36: two registers and a tail of 4 at 16 lanes, four and a tail at 8, nine at 4. The
// step sums each output in the forward's order (w[0] x[t] first, then the taps j = 1 .. K-1), so
// every position's output is the forward's bit for bit, and the history the forward leaves.
TEST_CASE_TEMPLATE("short conv: the step over vector registers and a tail is the forward bit for bit", T, float,
                   double) {
  for (const int K : {1, 2, 4, 5}) {
    CAPTURE(K);
    const AttentionSpec s = spec_of(K, 4, 9);
    const int B = 2, Tn = 11, C = s.C();
    const auto w = random_vector<T>(size_t(3) * C * K, 70 + uint64_t(K));
    const auto x = random_vector<T>(size_t(3) * B * Tn * C, 80 + uint64_t(K));
    std::vector<T> whole = x, ext;
    std::vector<T> hist_whole(size_t(B) * short_conv_history_size(s));
    apply(s, w, whole, B, Tn, static_cast<const T*>(nullptr), hist_whole.data(), ext);
    std::vector<T> hist(size_t(B) * short_conv_history_size(s), T(0));
    const T* cw[3] = {w.data(), w.data() + size_t(C) * K, w.data() + 2 * size_t(C) * K};
    int mismatches = 0;
    for (int t = 0; t < Tn; ++t) {
      const std::vector<T> tok = step_token(s, cw, x, hist, B, Tn, t, static_cast<const int*>(nullptr));
      for (int i = 0; i < 3; ++i)
        for (int b = 0; b < B; ++b)
          for (int c = 0; c < C; ++c)
            mismatches += tok[(size_t(i) * B + b) * C + c] != whole[((size_t(i) * B + b) * Tn + t) * C + c];
    }
    CHECK(mismatches == 0);
    CHECK(hist == hist_whole);
  }
}
