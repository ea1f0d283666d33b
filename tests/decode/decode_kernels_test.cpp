// The decode row kernels against their reference twins (rmsnorm_forward,
// swiglu_forward, rope_forward).
#include <doctest/doctest.h>

#include <vector>

#include "decode/decode_kernels.h"
#include "layers/rope.h"
#include "layers/rmsnorm.h"
#include "layers/swiglu.h"
#include "support/gradcheck.h"

using namespace rfa;

TEST_CASE("decode kernels: rmsnorm, swiglu, rope equal the layer kernels") {
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
  // Each row at its own position (the decoder's rows are independent).
  std::vector<float> rref(x.size());
  std::vector<int64_t> pos(static_cast<size_t>(B));
  for (int b = 0; b < B; ++b) {
    pos[static_cast<size_t>(b)] = (17 + 5 * b) % 20;
    const size_t row = static_cast<size_t>(b) * H * Dh;
    rope_forward(rref.data() + row, x.data() + row, table, 1, 1, H, Dh, pos[static_cast<size_t>(b)]);
  }
  std::vector<float> rgot = x;
  rope_rows(rgot.data(), table, B, H, Dh, pos.data());
  test::check_close("rope", rgot.data(), rref.data(), rref.size(), 1e-6, 1e-7);
}
