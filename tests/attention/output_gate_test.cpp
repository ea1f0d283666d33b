// The output norm and gate (attention/output_gate.h): the forward against a plain reference
// (also in place, as decoding runs it), the backward (d o, dn overwritten and added into,
// d w_norm, d W_g) against central differences in double, and the float kernels against the
// double ones. The whole model with the option: the variants in support/attention_variants.h.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "attention/attention_spec.h"
#include "attention/output_gate.h"
#include "support/gradcheck.h"

using namespace rfa;
using test::check_close;
using test::random_vector;

namespace {

AttentionSpec spec_of(int H, int Dh, double eps = 1e-5) {
  AttentionConfig a;
  a.kind = AttentionKind::softmax;
  a.output_gate = true;
  AttentionSpec s = attention_spec_make(a, H, Dh);
  s.norm_eps = eps;
  return s;
}

// out[n, c] = o[n, c] r[n, h(c)] w_norm[c] SiLU(z[n, c]), z = n W_gᵀ, written out plainly.
std::vector<double> reference(const AttentionSpec& s, const std::vector<double>& o, const std::vector<double>& n,
                              const std::vector<double>& w_norm, const std::vector<double>& w_gate, int N) {
  const int C = s.C(), Dh = s.Dh;
  std::vector<double> out(size_t(N) * C);
  for (int r = 0; r < N; ++r)
    for (int h = 0; h < s.H; ++h) {
      double ss = 0;
      for (int d = 0; d < Dh; ++d) ss += o[size_t(r) * C + h * Dh + d] * o[size_t(r) * C + h * Dh + d];
      const double rstd = 1 / std::sqrt(ss / Dh + s.norm_eps);
      for (int d = 0; d < Dh; ++d) {
        const int c = h * Dh + d;
        double z = 0;
        for (int j = 0; j < C; ++j) z += n[size_t(r) * C + j] * w_gate[size_t(c) * C + j];
        out[size_t(r) * C + c] = o[size_t(r) * C + c] * rstd * w_norm[c] * z / (1 + std::exp(-z));
      }
    }
  return out;
}

struct Case {
  int N, H, Dh;
};

// Inputs of one case: o, n ~ normal; w_norm ~ 1 + noise (its init 1 would hide a skipped
// multiply); W_g large enough that SiLU is not near its linear part at 0.
struct Inputs {
  std::vector<double> o, n, w_norm, w_gate;
};

Inputs inputs_of(const AttentionSpec& s, int N, uint64_t seed) {
  const size_t C = size_t(s.C());
  Inputs in{random_vector<double>(N * C, seed), random_vector<double>(N * C, seed + 1),
            random_vector<double>(C, seed + 2, 0.3), random_vector<double>(C * C, seed + 3, 0.7)};
  for (double& w : in.w_norm) w += 1;
  return in;
}

template <typename T>
std::vector<T> gated(const AttentionSpec& s, const std::vector<T>& o, const std::vector<T>& n,
                     const std::vector<T>& w_norm, const std::vector<T>& w_gate, int N) {
  std::vector<T> out(o.size()), z(o.size());
  output_gate_apply(s, w_norm.data(), w_gate.data(), out.data(), o.data(), z.data(), n.data(), N);
  return out;
}

template <typename T>
std::vector<T> as(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

}  // namespace

TEST_CASE("output gate: the forward equals a plain reference, also in place and one row at a time") {
  for (const Case c : {Case{1, 1, 1}, Case{5, 2, 3}, Case{7, 4, 8}}) {
    CAPTURE(c.N);
    CAPTURE(c.H);
    CAPTURE(c.Dh);
    const AttentionSpec s = spec_of(c.H, c.Dh);
    const Inputs in = inputs_of(s, c.N, 11);
    const std::vector<double> want = reference(s, in.o, in.n, in.w_norm, in.w_gate, c.N);
    const std::vector<double> got = gated(s, in.o, in.n, in.w_norm, in.w_gate, c.N);
    check_close("out", got.data(), want.data(), want.size(), 1e-12, 1e-14);
    // In place (o = out), serial products: the decoding step's call.
    std::vector<double> inplace = in.o, z(in.o.size());
    output_gate_apply(s, in.w_norm.data(), in.w_gate.data(), inplace.data(), inplace.data(), z.data(), in.n.data(),
                      c.N, GemmThreads::one);
    check_close("out in place", inplace.data(), want.data(), want.size(), 1e-12, 1e-14);
  }
}

TEST_CASE("output gate: gradients match central differences (d o, dn overwritten and added, d w_norm, d W_g)") {
  for (const Case c : {Case{1, 1, 1}, Case{5, 2, 3}, Case{4, 3, 4}}) {
    for (const double eps : {1e-5, 0.5}) {  // a large eps: its term in r must be right too
      CAPTURE(c.N);
      CAPTURE(c.H);
      CAPTURE(c.Dh);
      CAPTURE(eps);
      const AttentionSpec s = spec_of(c.H, c.Dh, eps);
      const int64_t N = c.N, C = s.C();
      Inputs in = inputs_of(s, c.N, 29);
      const std::vector<double> R = random_vector<double>(size_t(N * C), 97);  // dL/dout
      auto loss = [&] {
        const std::vector<double> out = gated(s, in.o, in.n, in.w_norm, in.w_gate, c.N);
        return test::weighted_sum(out.data(), R.data(), out.size());
      };
      // The forward's z, as the training forward saves it.
      std::vector<double> out(size_t(N * C)), z(size_t(N * C));
      output_gate_apply(s, in.w_norm.data(), in.w_gate.data(), out.data(), in.o.data(), z.data(), in.n.data(), N);
      std::vector<double> scratch(size_t(output_gate_scratch_size(s, 1, c.N)), 0.0);
      REQUIRE(scratch.size() == size_t(3 * N * C));
      std::vector<double> dw_norm(size_t(C), 0.25), dw_gate(size_t(C * C), -0.5);  // added into
      output_gate_apply_backward(s, in.w_norm.data(), dw_norm.data(), dw_gate.data(), scratch.data(), R.data(),
                                 in.o.data(), z.data(), in.n.data(), N);
      std::vector<double> dn(size_t(N * C), 123.0), dn_added(size_t(N * C), 2.0);
      output_gate_apply_backward_dn(s, in.w_gate.data(), scratch.data(), dn.data(), false, N);
      output_gate_apply_backward_dn(s, in.w_gate.data(), scratch.data(), dn_added.data(), true, N);
      for (size_t i = 0; i < dn.size(); ++i) CHECK(dn_added[i] == doctest::Approx(dn[i] + 2.0).epsilon(1e-12));
      for (double& v : dw_norm) v -= 0.25;
      for (double& v : dw_gate) v += 0.5;
      const test::GradCheckTolerance tol{.eps = 1e-6, .rtol = 1e-6, .atol = 1e-9};
      test::check_gradient("o", in.o.data(), scratch.data(), in.o.size(), loss, tol);
      test::check_gradient("n", in.n.data(), dn.data(), in.n.size(), loss, tol);
      test::check_gradient("w_norm", in.w_norm.data(), dw_norm.data(), in.w_norm.size(), loss, tol);
      test::check_gradient("w_gate", in.w_gate.data(), dw_gate.data(), in.w_gate.size(), loss, tol);
    }
  }
}

TEST_CASE("output gate: the float forward and backward agree with the double ones") {
  const AttentionSpec s = spec_of(4, 16);
  const int N = 37;  // rows over several threads' shares
  const int64_t C = s.C();
  const Inputs in = inputs_of(s, N, 5);
  const std::vector<double> R = random_vector<double>(size_t(N * C), 7);
  auto run = [&](auto zero, std::vector<double>& out, std::vector<double>& grads) {
    using T = decltype(zero);
    const std::vector<T> o = as<T>(in.o), n = as<T>(in.n), wn = as<T>(in.w_norm), wg = as<T>(in.w_gate),
                         dout = as<T>(R);
    const size_t nc = static_cast<size_t>(N * C), c1 = static_cast<size_t>(C);
    std::vector<T> y(nc), z(nc), scratch(3 * nc), dwn(c1), dwg(c1 * c1), dn(nc);
    output_gate_apply(s, wn.data(), wg.data(), y.data(), o.data(), z.data(), n.data(), N);
    output_gate_apply_backward(s, wn.data(), dwn.data(), dwg.data(), scratch.data(), dout.data(), o.data(),
                               z.data(), n.data(), N);
    output_gate_apply_backward_dn(s, wg.data(), scratch.data(), dn.data(), false, N);
    out.assign(y.begin(), y.end());
    grads.assign(scratch.begin(), scratch.begin() + N * C);  // d o
    grads.insert(grads.end(), dn.begin(), dn.end());
    grads.insert(grads.end(), dwn.begin(), dwn.end());
    grads.insert(grads.end(), dwg.begin(), dwg.end());
  };
  std::vector<double> out64, grads64, out32, grads32;
  run(0.0, out64, grads64);
  run(0.0f, out32, grads32);
  check_close("out", out32.data(), out64.data(), out64.size(), 1e-4, 1e-5);
  check_close("gradients", grads32.data(), grads64.data(), grads64.size(), 1e-3, 1e-3);
}

TEST_CASE("output gate: nothing saved, no scratch and no parameters without the option") {
  AttentionConfig a;
  a.kind = AttentionKind::rfa_gate;
  const AttentionSpec off = attention_spec_make(a, 2, 4);
  CHECK(output_gate_saved_size(off, 3, 5) == 0);
  CHECK(output_gate_scratch_size(off, 3, 5) == 0);
  a.output_gate = true;
  const AttentionSpec on = attention_spec_make(a, 2, 4);
  CHECK(output_gate_saved_size(on, 3, 5) == 2 * 3 * 5 * 8);
  CHECK(output_gate_scratch_size(on, 3, 5) == 3 * 3 * 5 * 8);
  const std::vector<AttentionParam> p_off = attention_params(off), p_on = attention_params(on);
  REQUIRE(p_on.size() == p_off.size() + 2);
  CHECK(p_on[p_off.size()].name == "out_norm");
  CHECK(p_on[p_off.size()].shape == std::vector<int64_t>{8});
  CHECK(!p_on[p_off.size()].decay);
  CHECK(p_on[p_off.size() + 1].name == "out_gate");
  CHECK(p_on[p_off.size() + 1].shape == std::vector<int64_t>{8, 8});
  CHECK(p_on[p_off.size() + 1].decay);
  CHECK(attention_reads_n(on));
  a.kind = AttentionKind::softmax;  // reads no n of its own
  CHECK(attention_reads_n(attention_spec_make(a, 2, 4)));
  a.output_gate = false;
  CHECK(!attention_reads_n(attention_spec_make(a, 2, 4)));
}
