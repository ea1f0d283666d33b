#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

#include "core/number_text.h"

using namespace rfa;

TEST_CASE("number text: small integers in full, type limits as powers of two") {
  CHECK(integer_text(int64_t{0}) == "0");
  CHECK(integer_text(int64_t{-3}) == "-3");
  CHECK(integer_text(int64_t{65536}) == "65536");
  CHECK(integer_text(int64_t{3000000}) == "3000000");
  CHECK(integer_text(int64_t{1} << 20) == "2^20");
  CHECK(integer_text(int64_t{std::numeric_limits<int>::max()}) == "2^31-1");
  CHECK(integer_text(int64_t{std::numeric_limits<int>::min()}) == "-2^31");
  CHECK(integer_text(std::numeric_limits<int64_t>::max()) == "2^63-1");
  CHECK(integer_text(std::numeric_limits<int64_t>::min()) == "-2^63");
  CHECK(integer_text(std::numeric_limits<uint64_t>::max()) == "2^64-1");
}

TEST_CASE("number text: doubles read back, and DBL_MAX is short") {
  CHECK(number_text(0.05) == "0.05");
  CHECK(number_text(260) == "260");
  CHECK(number_text(16777216) == "2^24");
  CHECK(number_text(0x1p63) == "2^63");
  CHECK(number_text(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(number_text(std::numeric_limits<double>::max()).size() < 30);
}
