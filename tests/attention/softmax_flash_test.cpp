#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attention/softmax_attention.h"
#include "attention/softmax_flash.h"
#include "core/parallel.h"
#include "support/gradcheck.h"

using namespace rfa;
using rfa::test::random_vector;

namespace {

template <typename T>
struct FlashRun {
  AttentionDims d;
  std::vector<T> ws, lse, out;
  explicit FlashRun(const AttentionDims& dims)
      : d(dims),
        ws(softmax_flash_workspace_size(dims, thread_count())),
        lse(softmax_flash_saved_size(dims)),
        out(size_t(dims.B) * dims.T * dims.C()) {}
  void forward(const T* q, const T* k, const T* v) {
    softmax_flash_forward(out.data(), lse.data(), Workspace<T>{ws.data(), ws.size()}, q, k, v, d);
  }
  void backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v) {
    softmax_flash_backward(dq, dk, dv, Workspace<T>{ws.data(), ws.size()}, dout, out.data(), lse.data(), q, k, v, d);
  }
};

template <typename T>
struct ReferenceRun {
  AttentionDims d;
  std::vector<T> ws, probs, out;
  explicit ReferenceRun(const AttentionDims& dims)
      : d(dims),
        ws(softmax_attention_workspace_size(dims, thread_count())),
        probs(softmax_attention_saved_size(dims)),
        out(size_t(dims.B) * dims.T * dims.C()) {}
  void forward(const T* q, const T* k, const T* v) {
    softmax_attention_forward_reference(out.data(), probs.data(), Workspace<T>{ws.data(), ws.size()}, q, k, v, d);
  }
  void backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v) {
    softmax_attention_backward_reference(dq, dk, dv, Workspace<T>{ws.data(), ws.size()}, dout, probs.data(), q, k, v, d);
  }
};

// Flash against the (T, T) reference, forward and backward, in precision T.
template <typename T>
void check_against_reference(const AttentionDims& d, double rtol, double atol) {
  const size_t n = size_t(d.B) * d.T * d.C();
  auto q = random_vector<T>(n, 31, 1.5), k = random_vector<T>(n, 32, 1.5), v = random_vector<T>(n, 33);
  auto dout = random_vector<T>(n, 34);
  FlashRun<T> flash(d);
  ReferenceRun<T> ref(d);
  flash.forward(q.data(), k.data(), v.data());
  ref.forward(q.data(), k.data(), v.data());
  rfa::test::check_close("out", flash.out.data(), ref.out.data(), n, rtol, atol);
  // Backward overwrites: stale values must not leak through.
  std::vector<T> dq(n, T(0.5)), dk(n, T(0.5)), dv(n, T(0.5)), rq(n), rk(n), rv(n);
  flash.backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data());
  ref.backward(rq.data(), rk.data(), rv.data(), dout.data(), q.data(), k.data(), v.data());
  rfa::test::check_close("dq", dq.data(), rq.data(), n, rtol, atol);
  rfa::test::check_close("dk", dk.data(), rk.data(), n, rtol, atol);
  rfa::test::check_close("dv", dv.data(), rv.data(), n, rtol, atol);
}

}  // namespace

TEST_CASE("flash softmax: equals the (T, T) reference for T not a multiple of the block") {
  // T = 150 = 2 full blocks and a partial one; Dh 20 is not a multiple of a register.
  for (AttentionDims d : {AttentionDims{2, 150, 3, 20}, AttentionDims{1, 131, 2, 64}, AttentionDims{3, 5, 2, 16}}) {
    CAPTURE(d.T);
    CAPTURE(d.Dh);
    check_against_reference<double>(d, 1e-11, 1e-12);
    check_against_reference<float>(d, 2e-4, 2e-5);
  }
}

TEST_CASE("flash softmax: logsumexp is the log of the row's normaliser") {
  AttentionDims d{1, 70, 1, 8};
  const size_t n = size_t(d.T) * d.C();
  auto q = random_vector<double>(n, 41), k = random_vector<double>(n, 42), v = random_vector<double>(n, 43);
  FlashRun<double> flash(d);
  flash.forward(q.data(), k.data(), v.data());
  for (int i : {0, 1, 63, 64, 69}) {
    double sum = 0;
    for (int j = 0; j <= i; ++j) {
      double s = 0;
      for (int e = 0; e < d.Dh; ++e) s += q[size_t(i) * d.Dh + e] * k[size_t(j) * d.Dh + e];
      sum += std::exp(s / std::sqrt(double(d.Dh)));
    }
    CHECK(flash.lse[size_t(i)] == doctest::Approx(std::log(sum)).epsilon(1e-12));
  }
}

TEST_CASE("flash softmax: backward matches central differences across blocks") {
  AttentionDims d{1, 70, 2, 4};  // a full block and a partial one
  const size_t n = size_t(d.B) * d.T * d.C();
  auto q = random_vector<double>(n, 51), k = random_vector<double>(n, 52), v = random_vector<double>(n, 53);
  auto R = random_vector<double>(n, 54);
  FlashRun<double> flash(d);
  auto loss = [&] {
    flash.forward(q.data(), k.data(), v.data());
    return rfa::test::weighted_sum(flash.out.data(), R.data(), n);
  };
  loss();
  std::vector<double> dq(n, 0.25), dk(n, 0.25), dv(n, 0.25);
  flash.backward(dq.data(), dk.data(), dv.data(), R.data(), q.data(), k.data(), v.data());
  // eps 1e-5: the loss sums 70 rows, so a smaller step drowns in its rounding.
  rfa::test::GradCheckTolerance tol{1e-5, 1e-6, 1e-9};
  rfa::test::check_gradient("q", q.data(), dq.data(), n, loss, tol);
  rfa::test::check_gradient("k", k.data(), dk.data(), n, loss, tol);
  rfa::test::check_gradient("v", v.data(), dv.data(), n, loss, tol);
}
