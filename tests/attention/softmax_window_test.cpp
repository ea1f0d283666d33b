// Blockwise softmax with a sliding window (softmax_flash's window, attention.window): query i
// attends to keys max(first(i), i - w + 1) .. i. Against a plain quadratic masked reference
// written out loop by loop (forward and every input gradient), for lengths that are not a
// multiple of the block (kFlashBlock = 64), windows of 1, 3, around the block size and wider
// than T, with and without document boundaries; against central differences in double; and
// window 0 or w >= T runs give exactly the bits of the unwindowed kernel.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "attention/softmax_flash.h"
#include "core/parallel.h"
#include "support/gradcheck.h"

using namespace rfa;
using rfa::test::random_vector;

namespace {

struct Inputs {
  AttentionDims d;
  std::vector<double> q, k, v, dout;
  Inputs(AttentionDims dims, uint64_t seed) : d(dims) {
    const size_t n = size_t(d.B) * d.T * d.C();
    q = random_vector<double>(n, seed, 1.5);
    k = random_vector<double>(n, seed + 1, 1.5);
    v = random_vector<double>(n, seed + 2);
    dout = random_vector<double>(n, seed + 3);
  }
  size_t size() const { return q.size(); }
};

struct Grads {
  std::vector<double> out, dq, dk, dv;
  explicit Grads(size_t n) : out(n), dq(n, 0.5), dk(n, 0.5), dv(n, 0.5) {}  // stale values must be overwritten
};

// The first key query i of row b may read: its document's first token, and i - w + 1 when w > 0.
int first_key(const uint8_t* starts, const AttentionDims& d, int b, int i, int w) {
  int f = 0;
  if (starts)
    for (int t = i; t >= 0; --t)
      if (starts[size_t(b) * d.T + t]) {
        f = t;
        break;
      }
  return w > 0 ? std::max(f, i - w + 1) : f;
}

// The plain form, per (b, h, i): p_ij = softmax_j(q_i·k_j / sqrt(Dh)) over j in [first, i],
// out_i = sum_j p_ij v_j; backward dp_ij = dout_i·v_j, ds_ij = p_ij (dp_ij - sum_j' p_ij' dp_ij'),
// dq_i = sum_j ds_ij k_j / sqrt(Dh), dk_j = sum_i ds_ij q_i / sqrt(Dh), dv_j = sum_i p_ij dout_i.
Grads reference(const Inputs& x, const uint8_t* starts, int w) {
  const AttentionDims& d = x.d;
  const int C = d.C();
  Grads g(x.size());
  std::fill(g.dq.begin(), g.dq.end(), 0.0), std::fill(g.dk.begin(), g.dk.end(), 0.0);
  std::fill(g.dv.begin(), g.dv.end(), 0.0);
  const double scale = 1.0 / std::sqrt(double(d.Dh));
  std::vector<double> p(size_t(d.T)), dp(size_t(d.T));
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.H; ++h)
      for (int i = 0; i < d.T; ++i) {
        auto at = [&](int t) { return (size_t(b) * d.T + t) * C + size_t(h) * d.Dh; };
        const int lo = first_key(starts, d, b, i, w);
        double mx = -INFINITY;
        for (int j = lo; j <= i; ++j) {
          double s = 0;
          for (int e = 0; e < d.Dh; ++e) s += x.q[at(i) + e] * x.k[at(j) + e];
          p[size_t(j)] = s * scale;
          mx = std::max(mx, p[size_t(j)]);
        }
        double sum = 0;
        for (int j = lo; j <= i; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - mx));
        double delta = 0;
        for (int j = lo; j <= i; ++j) {
          p[size_t(j)] /= sum;
          double s = 0;
          for (int e = 0; e < d.Dh; ++e) s += x.dout[at(i) + e] * x.v[at(j) + e];
          dp[size_t(j)] = s;
          delta += p[size_t(j)] * s;
        }
        for (int e = 0; e < d.Dh; ++e) g.out[at(i) + e] = 0;
        for (int j = lo; j <= i; ++j) {
          const double pj = p[size_t(j)], ds = pj * (dp[size_t(j)] - delta);
          for (int e = 0; e < d.Dh; ++e) {
            g.out[at(i) + e] += pj * x.v[at(j) + e];
            g.dv[at(j) + e] += pj * x.dout[at(i) + e];
            g.dq[at(i) + e] += scale * ds * x.k[at(j) + e];
            g.dk[at(j) + e] += scale * ds * x.q[at(i) + e];
          }
        }
      }
  return g;
}

template <typename T>
struct Flash {
  AttentionDims d;
  std::vector<T> q, k, v, dout, lse, ws;
  explicit Flash(const Inputs& x)
      : d(x.d),
        q(x.q.begin(), x.q.end()),
        k(x.k.begin(), x.k.end()),
        v(x.v.begin(), x.v.end()),
        dout(x.dout.begin(), x.dout.end()),
        lse(softmax_flash_saved_size(x.d)),
        ws(softmax_flash_workspace_size(x.d, thread_count())) {}
  void forward(T* out, const uint8_t* starts, int w) {
    softmax_flash_forward(out, lse.data(), Workspace<T>{ws.data(), ws.size()}, q.data(), k.data(), v.data(), d,
                          starts, w);
  }
  std::vector<T> out_, dq, dk, dv;
  void run(const uint8_t* starts, int w) {
    const size_t n = q.size();
    out_.assign(n, T(0)), dq.assign(n, T(0.5)), dk.assign(n, T(0.5)), dv.assign(n, T(0.5));
    forward(out_.data(), starts, w);
    softmax_flash_backward(dq.data(), dk.data(), dv.data(), Workspace<T>{ws.data(), ws.size()}, dout.data(),
                           out_.data(), lse.data(), q.data(), k.data(), v.data(), d, starts, w);
  }
};

template <typename T>
void check_against_reference(const Inputs& x, const uint8_t* starts, int w, double rtol, double atol) {
  const Grads ref = reference(x, starts, w);
  Flash<T> f(x);
  f.run(starts, w);
  const size_t n = x.size();
  test::check_close("out", f.out_.data(), ref.out.data(), n, rtol, atol);
  test::check_close("dq", f.dq.data(), ref.dq.data(), n, rtol, atol);
  test::check_close("dk", f.dk.data(), ref.dk.data(), n, rtol, atol);
  test::check_close("dv", f.dv.data(), ref.dv.data(), n, rtol, atol);
}

// Document starts for two rows of length T: row 0 has documents beginning at 0, 40, 64 and
// 97 (across and on block edges); row 1 began before the row and has one starting at 71.
std::vector<uint8_t> two_row_starts(int T) {
  std::vector<uint8_t> s(size_t(2) * T, 0);
  for (int t : {0, 40, 64, 97})
    if (t < T) s[size_t(t)] = 1;
  if (71 < T) s[size_t(T) + 71] = 1;
  return s;
}

}  // namespace

TEST_CASE("windowed flash softmax: equals the masked quadratic reference for uneven lengths and windows") {
  for (AttentionDims d : {AttentionDims{2, 150, 2, 8}, AttentionDims{2, 5, 1, 4}, AttentionDims{1, 200, 1, 20}}) {
    const Inputs x(d, 71);
    for (int w : {1, 3, 17, 63, 64, 65, 128, 129, d.T - 1, d.T, d.T + 5}) {
      if (w < 1) continue;
      CAPTURE(d.T);
      CAPTURE(w);
      check_against_reference<double>(x, nullptr, w, 1e-11, 1e-12);
      check_against_reference<float>(x, nullptr, w, 2e-4, 2e-5);
    }
  }
}

TEST_CASE("windowed flash softmax: with document boundaries a token sees max(its document's start, i - w + 1)") {
  const AttentionDims d{2, 150, 2, 8};
  const Inputs x(d, 81);
  const std::vector<uint8_t> starts = two_row_starts(d.T);
  for (int w : {1, 3, 30, 64, 100, 200}) {
    CAPTURE(w);
    check_against_reference<double>(x, starts.data(), w, 1e-11, 1e-12);
  }
}

TEST_CASE("windowed flash softmax: backward matches central differences in double") {
  // T = 70: a full block and a partial one; w = 5 leaves most of the diagonal block and all
  // of the first key block outside the later queries' windows, w = 66 reaches across blocks.
  const AttentionDims d{1, 70, 2, 4};
  const size_t n = size_t(d.T) * d.C();
  const std::vector<uint8_t> starts = [&] {
    std::vector<uint8_t> s(size_t(d.T), 0);
    s[33] = 1;
    return s;
  }();
  for (int w : {5, 66}) {
    for (const uint8_t* st : {static_cast<const uint8_t*>(nullptr), starts.data()}) {
      CAPTURE(w);
      CAPTURE(st != nullptr);
      Inputs x(d, 91);
      Flash<double> f(x);
      std::vector<double> out(n);
      auto loss = [&] {
        f.forward(out.data(), st, w);
        return test::weighted_sum(out.data(), f.dout.data(), n);
      };
      f.run(st, w);
      const test::GradCheckTolerance tol{1e-5, 1e-6, 1e-9};
      test::check_gradient("q", f.q.data(), f.dq.data(), n, loss, tol);
      test::check_gradient("k", f.k.data(), f.dk.data(), n, loss, tol);
      test::check_gradient("v", f.v.data(), f.dv.data(), n, loss, tol);
    }
  }
}

TEST_CASE("windowed flash softmax: window 0, or one at least T, gives the unwindowed kernel's bits") {
  const AttentionDims d{2, 150, 2, 8};
  const Inputs x(d, 101);
  Flash<float> full(x), wide(x), none(x);
  full.run(nullptr, 0);
  wide.run(nullptr, d.T);
  // The default arguments: the path every caller before the window took.
  none.out_.assign(x.size(), 0.f), none.dq.assign(x.size(), 0.f), none.dk.assign(x.size(), 0.f);
  none.dv.assign(x.size(), 0.f);
  softmax_flash_forward(none.out_.data(), none.lse.data(), Workspace<float>{none.ws.data(), none.ws.size()},
                        none.q.data(), none.k.data(), none.v.data(), d);
  softmax_flash_backward(none.dq.data(), none.dk.data(), none.dv.data(),
                         Workspace<float>{none.ws.data(), none.ws.size()}, none.dout.data(), none.out_.data(),
                         none.lse.data(), none.q.data(), none.k.data(), none.v.data(), d);
  for (const Flash<float>* f : {&full, &wide}) {
    CHECK(f->out_ == none.out_);
    CHECK(f->dq == none.dq);
    CHECK(f->dk == none.dk);
    CHECK(f->dv == none.dv);
  }
}

TEST_CASE("windowed flash softmax: a window of 1 returns each token's own value") {
  const AttentionDims d{1, 70, 2, 4};
  const Inputs x(d, 111);
  Flash<double> f(x);
  f.run(nullptr, 1);
  test::check_close("out", f.out_.data(), x.v.data(), x.size(), 1e-14, 1e-15);
}

TEST_CASE("windowed flash softmax: key and query blocks wholly outside the window are skipped, not masked") {
  // Skipped blocks are never read, so NaN in them cannot reach the result; a block that was
  // read and masked would carry it in (0 * NaN = NaN in the products). w = 3, T = 256: queries
  // from 128 on read key blocks from 64 on (forward, dq), and keys below 64 are read by
  // queries below 128 only (dk, dv).
  const AttentionDims d{1, 256, 1, 8};
  const int w = 3, C = d.C();
  const Inputs x(d, 121);
  Flash<double> clean(x);
  clean.run(nullptr, w);
  Flash<double> keys(x);  // keys and values 0..63 poisoned
  std::fill(keys.k.begin(), keys.k.begin() + 64 * C, NAN);
  std::fill(keys.v.begin(), keys.v.begin() + 64 * C, NAN);
  keys.run(nullptr, w);
  const size_t from = size_t(128) * C, n = x.size() - from;
  test::check_close("out", keys.out_.data() + from, clean.out_.data() + from, n, 0, 1e-300);
  test::check_close("dq", keys.dq.data() + from, clean.dq.data() + from, n, 0, 1e-300);
  Flash<double> queries(x);  // queries and output gradients 128..255 poisoned
  std::fill(queries.q.begin() + from, queries.q.end(), NAN);
  std::fill(queries.dout.begin() + from, queries.dout.end(), NAN);
  queries.run(nullptr, w);
  test::check_close("dk", queries.dk.data(), clean.dk.data(), size_t(64) * C, 0, 1e-300);
  test::check_close("dv", queries.dv.data(), clean.dv.data(), size_t(64) * C, 0, 1e-300);
}
