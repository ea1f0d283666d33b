#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "attention/causal_matmul.h"
#include "attention/tile_matmul.h"
#include "kernels/vector_math.h"
#include "support/gradcheck.h"

using namespace rfa;
using rfa::test::random_vector;

namespace {

// A (m, m) with zeros right of the diagonal, as the chunked cores' P and dA.
std::vector<float> lower_matrix(int m, size_t ld, uint64_t seed) {
  std::vector<float> A = random_vector<float>(size_t(m) * ld, seed);
  for (int i = 0; i < m; ++i)
    for (size_t j = i + 1; j < ld; ++j) A[i * ld + j] = 0.0f;
  return A;
}

}  // namespace

// Square chunks (m = k): the row split of matmul (tiles, then vecmat for m % 4 rows) at every
// size around it; the causal products must give matmul's numbers on everything they compute.
TEST_CASE("causal products equal matmul over the causal blocks, bit for bit") {
  for (int m : {1, 3, 4, 7, 8, 13, 16, 33, 64}) {
    for (int n : {5, 16, 40, 64}) {
      CAPTURE(m);
      CAPTURE(n);
      const size_t lda = pad16(m), ldb = pad16(std::max(m, n)), ldc = ldb;
      const std::vector<float> A = lower_matrix(m, lda, 3);
      const std::vector<float> B = random_vector<float>(size_t(m) * ldb, 4);
      for (bool accumulate : {false, true}) {
        std::vector<float> want(size_t(m) * ldc, 0.5f), got = want;
        // C = A B, A lower: each row tile reads keys up to its last row.
        matmul(want.data(), ldc, A.data(), lda, B.data(), ldb, m, m, n, 0.75f, accumulate);
        matmul_lower_a(got.data(), ldc, A.data(), lda, B.data(), ldb, m, m, n, 0.75f, accumulate);
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) REQUIRE(got[i * ldc + j] == want[i * ldc + j]);
        // C = Aᵀ B, A lower: each row tile reads from its first row on. vecmat's remainder rows
        // sum in four partial sums that start where the range does, so those agree to rounding.
        want.assign(want.size(), 0.5f), got = want;
        matmul_at(want.data(), ldc, A.data(), lda, B.data(), ldb, m, m, n, 0.75f, accumulate);
        matmul_at_upper(got.data(), ldc, A.data(), lda, B.data(), ldb, m, m, n, 0.75f, accumulate);
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) {
            if (i < m - m % 4) REQUIRE(got[i * ldc + j] == want[i * ldc + j]);
            else REQUIRE(std::abs(got[i * ldc + j] - want[i * ldc + j]) <= 1e-5f * (1 + std::abs(want[i * ldc + j])));
          }
      }
      // C's lower triangle of a full product: every column j <= i is matmul's; none past the row
      // tile's last row is written.
      const int k = 37;
      const std::vector<float> X = random_vector<float>(size_t(m) * pad16(k), 5);
      const std::vector<float> Y = random_vector<float>(size_t(k) * ldb, 6);
      std::vector<float> want(size_t(m) * ldc, 0.0f), got(size_t(m) * ldc, -9.0f);
      matmul(want.data(), ldc, X.data(), pad16(k), Y.data(), ldb, m, k, m, 1.0f, false);
      matmul_lower_c(got.data(), ldc, X.data(), pad16(k), Y.data(), ldb, m, k, m, 1.0f, false);
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j <= i; ++j) REQUIRE(got[i * ldc + j] == want[i * ldc + j]);
        for (int j = i + 1; j < m; ++j) REQUIRE((got[i * ldc + j] == want[i * ldc + j] || got[i * ldc + j] == -9.0f));
      }
      // C's upper triangle (columns j >= i, n of them), as the flash backward's pᵀ and dsᵀ: every
      // column j >= i is matmul's; the rest is matmul's or not written.
      std::vector<float> up_want(size_t(m) * ldc, 0.0f), up_got(size_t(m) * ldc, -9.0f);
      matmul(up_want.data(), ldc, X.data(), pad16(k), Y.data(), ldb, m, k, n, 1.0f, false);
      matmul_upper_c(up_got.data(), ldc, X.data(), pad16(k), Y.data(), ldb, m, k, n, 1.0f, false);
      int computed_left = 0;
      for (int i = 0; i < m; ++i) {
        for (int j = i; j < n; ++j) REQUIRE(up_got[i * ldc + j] == up_want[i * ldc + j]);
        for (int j = 0; j < std::min(i, n); ++j) {
          REQUIRE((up_got[i * ldc + j] == up_want[i * ldc + j] || up_got[i * ldc + j] == -9.0f));
          computed_left += up_got[i * ldc + j] != -9.0f;
        }
      }
      if (m == 64 && n == 64) CHECK(computed_left < 64 * 63 / 4);  // the band, not the whole matrix
      // C = A B with B zero left of its diagonal (B_pj = 0 for j < p), as the flash backward's dsᵀ
      // in dqᵀ = K dsᵀ: tile_matmul's numbers, bit for bit (only zero terms are left out).
      std::vector<float> Bu = random_vector<float>(size_t(m) * ldb, 8);
      for (int p = 0; p < m; ++p)
        for (int j = 0; j < std::min(p, int(ldb)); ++j) Bu[p * ldb + j] = 0.0f;
      const std::vector<float> Ak = random_vector<float>(size_t(m) * lda, 9);
      for (bool accumulate : {false, true}) {
        std::vector<float> b_want(size_t(m) * ldc, 0.5f), b_got = b_want;
        tile_matmul(b_want.data(), ldc, Ak.data(), lda, Bu.data(), ldb, m, m, n, 0.75f, accumulate);
        matmul_upper_b(b_got.data(), ldc, Ak.data(), lda, Bu.data(), ldb, m, m, n, 0.75f, accumulate);
        CHECK(b_got == b_want);
      }
      // C = A B with A zero left of its diagonal (A_ip = 0 for p < i): each row tile reads from its
      // first row on; vecmat's remainder rows agree to rounding (as matmul_at_upper's).
      std::vector<float> U = random_vector<float>(size_t(m) * lda, 7);
      for (int i = 0; i < m; ++i)
        for (int p = 0; p < i; ++p) U[i * lda + p] = 0.0f;
      for (bool accumulate : {false, true}) {
        std::vector<float> a_want(size_t(m) * ldc, 0.5f), a_got = a_want;
        matmul(a_want.data(), ldc, U.data(), lda, B.data(), ldb, m, m, n, 0.75f, accumulate);
        matmul_upper_a(a_got.data(), ldc, U.data(), lda, B.data(), ldb, m, m, n, 0.75f, accumulate);
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) {
            if (i < m - m % 4) REQUIRE(a_got[i * ldc + j] == a_want[i * ldc + j]);
            else REQUIRE(std::abs(a_got[i * ldc + j] - a_want[i * ldc + j]) <= 1e-5f * (1 + std::abs(a_want[i * ldc + j])));
          }
      }
    }
  }
}
