#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "attention/tile_matmul.h"
#include "kernels/vector_math.h"
#include "support/gradcheck.h"
#include "support/row_at_page_end.h"

using namespace rfa;
using rfa::test::random_vector;

TEST_CASE("vector math: float sin/cos and exp rows are accurate") {
  const int n = 20001;
  std::vector<float> u(n), s(n), c(n), e(n);
  for (int i = 0; i < n; ++i) u[i] = -200.0f + 400.0f * i / (n - 1);
  sincos_row(s.data(), c.data(), u.data(), n);
  double worst_sc = 0;
  for (int i = 0; i < n; ++i)
    worst_sc = std::max({worst_sc, std::abs(s[i] - std::sin(double(u[i]))), std::abs(c[i] - std::cos(double(u[i])))});
  CHECK(worst_sc < 2e-6);
  // Far from 0 too (the reduction by multiples of pi/2 up to |u| = 1e5), and scaled.
  std::vector<float> far(n), fs(n), fc(n);
  for (int i = 0; i < n; ++i) far[i] = -1e5f + 2e5f * i / (n - 1) + 0.37f;
  sincos_row(fs.data(), fc.data(), far.data(), n, 0.25f);
  double worst_far = 0;
  for (int i = 0; i < n; ++i)
    worst_far = std::max({worst_far, std::abs(fs[i] - 0.25 * std::sin(double(far[i]))),
                          std::abs(fc[i] - 0.25 * std::cos(double(far[i])))});
  CHECK(worst_far < 1e-6);
  for (int i = 0; i < n; ++i) e[i] = u[i] * 0.4f;  // [-80, 80]
  std::vector<float> arg = e;
  exp_row(e.data(), n);
  double worst_rel = 0;
  for (int i = 0; i < n; ++i) {
    double ref = std::exp(double(arg[i]));
    worst_rel = std::max(worst_rel, std::abs(e[i] - ref) / ref);
  }
  CHECK(worst_rel < 1e-6);
  float dot_a[37], dot_b[37];
  double ref = 0;
  for (int i = 0; i < 37; ++i) dot_a[i] = 0.1f * i, dot_b[i] = 1.0f - 0.05f * i, ref += double(dot_a[i]) * dot_b[i];
  CHECK(dot(dot_a, dot_b, 37) == doctest::Approx(ref).epsilon(1e-6));
}

namespace {

// Plain reference twin of vecmat / matmul.
std::vector<double> matmul_reference(const std::vector<double>& A, size_t lda, const std::vector<double>& B, size_t ldb,
                                     int m, int k, int n) {
  std::vector<double> C(size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j) C[size_t(i) * n + j] += A[i * lda + p] * B[p * ldb + j];
  return C;
}

}  // namespace

TEST_CASE("vector math: matmul and vecmat match the plain reference (odd shapes, accumulate, alpha)") {
  // Shapes around every register tile: 4-row and kTileRows-row blocks (6 or 8), the vecmat
  // remainder rows, one and two registers of columns (4, 8 or 16 floats) and their tails.
  for (auto [m, k, n] : {std::tuple{1, 1, 1}, std::tuple{3, 5, 17}, std::tuple{4, 7, 16}, std::tuple{9, 33, 40},
                         std::tuple{13, 64, 65}, std::tuple{6, 3, 8}, std::tuple{8, 9, 24}, std::tuple{12, 16, 33},
                         std::tuple{14, 5, 48}, std::tuple{17, 2, 9}, std::tuple{64, 128, 65}, std::tuple{27, 65, 80}}) {
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(n);
    const size_t lda = k + 3, ldb = pad16(n);  // B padded as the kernels require
    auto Ad = random_vector<double>(size_t(m) * lda, 91);
    auto Bd = random_vector<double>(size_t(k) * ldb, 92);
    auto ref = matmul_reference(Ad, lda, Bd, ldb, m, k, n);
    std::vector<float> A(Ad.begin(), Ad.end()), B(Bd.begin(), Bd.end());
    const size_t ldc = n + 1;
    std::vector<float> C(size_t(m) * ldc, 1.0f), Cv(size_t(m) * ldc, 0.0f);
    matmul(C.data(), ldc, A.data(), lda, B.data(), ldb, m, k, n, 0.5f, true);  // C = 1 + 0.5 A B
    for (int i = 0; i < m; ++i)
      vecmat(Cv.data() + i * ldc, A.data() + i * lda, B.data(), k, n, ldb, 2.0f, false);  // = 2 A B
    std::vector<double> got(size_t(m) * n), gotv(size_t(m) * n), want(size_t(m) * n), wantv(size_t(m) * n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        got[size_t(i) * n + j] = C[i * ldc + j], want[size_t(i) * n + j] = 1.0 + 0.5 * ref[size_t(i) * n + j];
        gotv[size_t(i) * n + j] = Cv[i * ldc + j], wantv[size_t(i) * n + j] = 2.0 * ref[size_t(i) * n + j];
      }
    rfa::test::check_close("matmul", got.data(), want.data(), got.size(), 1e-5, 1e-5);
    rfa::test::check_close("vecmat", gotv.data(), wantv.data(), gotv.size(), 1e-5, 1e-5);
    // Columns past n are never written.
    for (int i = 0; i < m; ++i) CHECK(C[i * ldc + n] == 1.0f);
  }
}

TEST_CASE("vector math: the register tiles do not change a result (every row of a tile sums in order)") {
  // matmul's rows outside the last m % 4 and every row of tile_matmul sum p in order, whatever
  // tile they fall in: each equals the one-row tile of the same row, bit for bit, on every target.
  for (auto [m, k, n] : {std::tuple{64, 128, 65}, std::tuple{14, 33, 40}, std::tuple{27, 7, 17}}) {
    CAPTURE(m);
    const size_t lda = k, ldb = pad16(n);
    auto Ad = random_vector<double>(size_t(m) * lda, 93);
    auto Bd = random_vector<double>(size_t(k) * ldb, 94);
    std::vector<float> A(Ad.begin(), Ad.end()), B(Bd.begin(), Bd.end());
    std::vector<float> C(size_t(m) * n), Ct(size_t(m) * n), row(n);
    matmul(C.data(), n, A.data(), lda, B.data(), ldb, m, k, n, 0.75f, false);
    tile_matmul(Ct.data(), n, A.data(), lda, B.data(), ldb, m, k, n, 0.75f, false);
    int differ = 0, differ_t = 0;
    for (int i = 0; i < m; ++i) {
      tile_matmul(row.data(), n, A.data() + i * lda, lda, B.data(), ldb, 1, k, n, 0.75f, false);
      for (int j = 0; j < n; ++j) {
        if (i < m - m % 4) differ += C[size_t(i) * n + j] != row[j];
        differ_t += Ct[size_t(i) * n + j] != row[j];
      }
    }
    CHECK(differ == 0);
    CHECK(differ_t == 0);
  }
}

TEST_CASE_TEMPLATE("vector math: short rows copied and zeroed whole, nothing past their end touched", T, float, double) {
  constexpr int W = Simd<T>::W;
  for (int n = 0; n <= 3 * W + 1; ++n) {
    INFO("n ", n);
    test::RowAtPageEnd<T> src(n), dst(n);
    for (int i = 0; i < n; ++i) src.row[i] = T(i + 1) / T(3);
    dst.row[-1] = T(-7);  // the element before the row: untouched
    copy_row(dst.row, src.row, n);
    CHECK(std::equal(dst.row, dst.row + n, src.row));
    CHECK(dst.row[-1] == T(-7));
    zero_row(dst.row, n);
    CHECK(std::all_of(dst.row, dst.row + n, [](T x) { return x == T(0); }));
    CHECK(dst.row[-1] == T(-7));
  }
}
