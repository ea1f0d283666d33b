#include "layers/rope.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "support/gradcheck.h"

using namespace rfa::test;

TEST_CASE("rope: the table holds cos/sin of p * theta^(-2i/Dh) and rejects bad sizes") {
  auto table = rfa::RopeTable::build(10, 8, 100.0);
  // p = 3, i = 1: angle = 3 * 100^(-2/8)
  double angle = 3.0 * std::pow(100.0, -0.25);
  CHECK(table.cos_row<double>(3)[1] == doctest::Approx(std::cos(angle)).epsilon(1e-15));
  CHECK(table.sin_row<double>(3)[1] == doctest::Approx(std::sin(angle)).epsilon(1e-15));
  CHECK(table.sin_row<float>(3)[1] == static_cast<float>(std::sin(angle)));
  CHECK(table.cos_row<double>(0)[3] == 1.0);
  CHECK_THROWS_AS(rfa::RopeTable::build(10, 7), rfa::Error);
  CHECK_THROWS_AS(rfa::RopeTable::build(0, 8), rfa::Error);
}

TEST_CASE("rope: rotates pair (2i, 2i+1) of each head by its angle") {
  // B 1, T 2, H 2, Dh 2: position 1, pair 0 rotates by 1 radian in both heads.
  auto table = rfa::RopeTable::build(4, 2);
  const double inp[] = {1, 2, 3, 4, 1, 0, 0, 1};
  double out[8];
  rfa::rope_forward(out, inp, table, 1, 2, 2, 2, 0);
  for (int i = 0; i < 4; ++i) CHECK(out[i] == inp[i]);  // position 0: identity
  CHECK(out[4] == doctest::Approx(std::cos(1.0)));
  CHECK(out[5] == doctest::Approx(std::sin(1.0)));
  CHECK(out[6] == doctest::Approx(-std::sin(1.0)));
  CHECK(out[7] == doctest::Approx(std::cos(1.0)));
}

TEST_CASE("rope: double backward matches central differences, overwrites the gradient, and runs in place") {
  const int B = 2, T = 3, H = 2, Dh = 6;
  const int64_t n = static_cast<int64_t>(B) * T * H * Dh;
  auto table = rfa::RopeTable::build(16, Dh);
  auto inp = random_vector<double>(n, 1), R = random_vector<double>(n, 2);
  std::vector<double> out(n);
  auto loss = [&] {
    rfa::rope_forward(out.data(), inp.data(), table, B, T, H, Dh, 5);
    return weighted_sum(out.data(), R.data(), n);
  };
  auto d = random_vector<double>(n, 3);  // garbage: every entry must be overwritten
  rfa::rope_backward(d.data(), R.data(), table, B, T, H, Dh, 5);
  check_gradient("dinp", inp.data(), d.data(), n, loss, {.eps = 1e-6, .rtol = 1e-7, .atol = 1e-9});
  auto in_place = R;
  rfa::rope_backward(in_place.data(), in_place.data(), table, B, T, H, Dh, 5);
  CHECK(in_place == d);
}

TEST_CASE("rope: in place equals out of place; pos_offset continues the sequence; float matches double") {
  const int B = 2, T = 8, H = 4, Dh = 16;
  const int64_t C = H * Dh, n = B * T * C;
  auto table = rfa::RopeTable::build(64, Dh);
  auto inp = random_vector<double>(n, 4);
  std::vector<double> out(n);
  rfa::rope_forward(out.data(), inp.data(), table, B, T, H, Dh, 0);
  auto in_place = inp;
  rfa::rope_forward(in_place.data(), in_place.data(), table, B, T, H, Dh, 0);
  check_close("in place", in_place.data(), out.data(), n, 0, 0);

  // Rows t = 5..7 of batch 1, rotated as a 3-step sequence starting at position 5.
  std::vector<double> tail(inp.begin() + (1 * T + 5) * C, inp.begin() + (1 * T + 8) * C), tail_out(3 * C);
  rfa::rope_forward(tail_out.data(), tail.data(), table, 1, 3, H, Dh, 5);
  check_close("offset", tail_out.data(), out.data() + (1 * T + 5) * C, 3 * C, 1e-15, 1e-15);

  std::vector<float> inp_f(inp.begin(), inp.end()), out_f(n);
  rfa::rope_forward(out_f.data(), inp_f.data(), table, B, T, H, Dh, 40);
  rfa::rope_forward(out.data(), inp.data(), table, B, T, H, Dh, 40);
  check_close("float", out_f.data(), out.data(), n, 1e-6, 1e-6);
}

TEST_CASE("rope: q.k after rotation depends only on the position difference") {
  const int Dh = 8;
  auto table = rfa::RopeTable::build(32, Dh);
  auto q = random_vector<double>(Dh, 5), k = random_vector<double>(Dh, 6);
  auto dot_at = [&](int pq, int pk) {
    std::vector<double> rq(Dh), rk(Dh);
    rfa::rope_forward(rq.data(), q.data(), table, 1, 1, 1, Dh, pq);
    rfa::rope_forward(rk.data(), k.data(), table, 1, 1, 1, Dh, pk);
    double s = 0;
    for (int i = 0; i < Dh; ++i) s += rq[i] * rk[i];
    return s;
  };
  CHECK(dot_at(7, 3) == doctest::Approx(dot_at(24, 20)).epsilon(1e-12));
  CHECK(dot_at(3, 7) == doctest::Approx(dot_at(10, 14)).epsilon(1e-12));
  CHECK(std::abs(dot_at(7, 3) - dot_at(7, 4)) > 1e-6);  // and it does depend on the difference
}

TEST_CASE("rope: a rebased table holds the same rows as one built from 0, and rotates by absolute position") {
  const int B = 1, T = 3, H = 2, Dh = 8;
  const int64_t n = int64_t(B) * T * H * Dh;
  auto whole = rfa::RopeTable::build(40, Dh, 500.0);
  auto slide = rfa::RopeTable::build(5, Dh, 500.0);
  CHECK(slide.covers(0, 5));
  CHECK_FALSE(slide.covers(3, 3));
  slide.rebase(30);
  CHECK(slide.first_position == 30);
  CHECK(slide.covers(30, 5));
  CHECK_FALSE(slide.covers(29, 1));
  CHECK_FALSE(slide.covers(33, 3));
  for (int64_t p = 30; p < 35; ++p)
    for (int i = 0; i < Dh / 2; ++i) {
      CHECK(slide.cos_row<double>(p)[i] == whole.cos_row<double>(p)[i]);
      CHECK(slide.sin_row<float>(p)[i] == whole.sin_row<float>(p)[i]);
    }
  auto inp = random_vector<double>(n, 9);
  std::vector<double> a(n), b(n);
  rfa::rope_forward(a.data(), inp.data(), whole, B, T, H, Dh, 31);
  rfa::rope_forward(b.data(), inp.data(), slide, B, T, H, Dh, 31);
  CHECK(a == b);
}
