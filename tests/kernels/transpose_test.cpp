#include <doctest/doctest.h>

#include <tuple>
#include <vector>

#include "kernels/transpose.h"
#include "support/gradcheck.h"

using namespace rfa;
using rfa::test::random_vector;

namespace {

// Every shape around the 8 x 8 blocks: whole blocks, edge rows, edge columns, both, none.
template <typename T>
void check_transpose(int rows, int cols) {
  CAPTURE(rows);
  CAPTURE(cols);
  const size_t lds = size_t(cols) + 3, ldd = size_t(rows) + 5;
  const std::vector<T> src = random_vector<T>(size_t(rows) * lds, 11);
  std::vector<T> dst(size_t(cols) * ldd, T(-7));
  transpose(dst.data(), ldd, src.data(), lds, rows, cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) REQUIRE(dst[j * ldd + i] == src[i * lds + j]);
  for (int j = 0; j < cols; ++j)  // the padding of each destination row is left alone
    for (size_t i = rows; i < ldd; ++i) REQUIRE(dst[j * ldd + i] == T(-7));
}

}  // namespace

TEST_CASE("transpose: float (register blocks) and double equal the plain loop, padding untouched") {
  for (auto [rows, cols] : {std::tuple{1, 1}, std::tuple{8, 8}, std::tuple{64, 128}, std::tuple{128, 65},
                            std::tuple{65, 33}, std::tuple{7, 9}, std::tuple{3, 16}, std::tuple{17, 5}}) {
    check_transpose<float>(rows, cols);
    check_transpose<double>(rows, cols);
  }
}
