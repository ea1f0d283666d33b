#include "kernels/bf16.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/rng.h"

using rfa::bf16_from_float_reference;
using rfa::bf16_to_float;

namespace {

float from_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

uint16_t convert_bits(uint32_t bits) { return bf16_from_float_reference(from_bits(bits)); }

// Round to nearest even done in double, for normal finite x: the two bf16
// neighbours are the truncation and the next value up in magnitude.
uint16_t nearest_even_by_value(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint16_t down = static_cast<uint16_t>(bits >> 16), up = static_cast<uint16_t>(down + 1);
  const double lo = std::abs(double(bf16_to_float(down))), hi = std::abs(double(bf16_to_float(up)));
  const double a = std::abs(double(x));
  if (a - lo < hi - a) return down;
  if (hi - a < a - lo) return up;
  return (down & 1) ? up : down;  // a tie: the even mantissa
}

}  // namespace

TEST_CASE("bf16 reference: exact values, ties to even, specials, denormals") {
  CHECK(convert_bits(0x3f800000u) == 0x3f80);  // 1.0
  CHECK(convert_bits(0xbf800000u) == 0xbf80);  // -1.0
  CHECK(convert_bits(0x3f808000u) == 0x3f80);  // tie, even below: stays
  CHECK(convert_bits(0x3f818000u) == 0x3f82);  // tie, odd below: rounds up to even
  CHECK(convert_bits(0x3f808001u) == 0x3f81);  // just above the tie
  CHECK(convert_bits(0x3f807fffu) == 0x3f80);  // just below the tie
  CHECK(convert_bits(0xbf818000u) == 0xbf82);  // sign does not change the rounding
  CHECK(convert_bits(0x3fffffffu) == 0x4000);  // carries into the exponent
  CHECK(convert_bits(0x7f7fffffu) == 0x7f80);  // FLT_MAX rounds to infinity
  CHECK(convert_bits(0x7f800000u) == 0x7f80);  // +inf
  CHECK(convert_bits(0xff800000u) == 0xff80);  // -inf
  CHECK(convert_bits(0x7fc00000u) == 0x7fc0);  // quiet NaN
  CHECK(convert_bits(0x7f800001u) == 0x7fc0);  // signalling NaN, low payload: quiet, still NaN
  CHECK(convert_bits(0xffff0000u) == 0xffff);  // NaN payload kept
  CHECK(std::isnan(bf16_to_float(convert_bits(0x7f800001u))));
  CHECK(convert_bits(0x00000000u) == 0x0000);
  CHECK(convert_bits(0x80000000u) == 0x8000);
  CHECK(convert_bits(0x00000001u) == 0x0000);  // denormals flush to a signed zero
  CHECK(convert_bits(0x007fffffu) == 0x0000);
  CHECK(convert_bits(0x80400000u) == 0x8000);
  CHECK(convert_bits(0x00800000u) == 0x0080);  // the smallest normal is exact
  for (uint32_t h = 0; h < 0x10000; ++h)     // every bf16 value that is not NaN reads back to itself
    if ((h & 0x7f80u) != 0 && (h & 0x7fffu) < 0x7f80u) CHECK(bf16_from_float_reference(bf16_to_float(uint16_t(h))) == h);
}

TEST_CASE("bf16 reference: agrees with round-to-nearest-even computed in double on random normal numbers") {
  rfa::CounterRng rng(77, 1);
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng.uniform() * 4294967296.0);
    const uint32_t exponent = bits & 0x7f800000u;
    if (exponent == 0 || exponent >= 0x7f000000u) continue;  // normal, away from the overflow edge
    const float x = from_bits(bits);
    INFO("bits ", bits);
    CHECK(bf16_from_float_reference(x) == nearest_even_by_value(x));
    ++checked;
  }
  CHECK(checked > 150000);
}

TEST_CASE("bf16: the vectorised conversion equals the reference on every upper half and edge lower halves") {
  if (!rfa::bf16_native()) MESSAGE("no AVX512-BF16 on this CPU: the vector path falls back to the scalar loop");
  rfa::CounterRng rng(5, 2);
  const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x4000, 0xc000};
  std::vector<float> x;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    for (uint32_t low : lows) x.push_back(from_bits(h << 16 | low));
    x.push_back(from_bits(h << 16 | (static_cast<uint32_t>(rng.uniform() * 65536.0) & 0xffffu)));
  }
  std::vector<uint16_t> fast(x.size() + 1, 0x1234), ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) ref[i] = bf16_from_float_reference(x[i]);
  // A length that is not a multiple of 16 or 32: the masked tail.
  const int64_t n = static_cast<int64_t>(x.size()) - 7;
  rfa::bf16_from_float(fast.data(), x.data(), n);
  int64_t mismatches = 0, first = -1;
  for (int64_t i = 0; i < n; ++i)
    if (fast[size_t(i)] != ref[size_t(i)]) mismatches += 1, first = first < 0 ? i : first;
  INFO("first mismatch at ", first);
  CHECK(mismatches == 0);
  CHECK(fast[size_t(n)] == 0x1234);  // nothing written past n
  for (int64_t len : {0, 1, 15, 16, 17, 31, 33}) {  // short arrays on the serial path
    std::vector<uint16_t> out(size_t(len) + 1, 0x1234);
    rfa::bf16_from_float_serial(out.data(), x.data() + 1000, len);
    for (int64_t i = 0; i < len; ++i) CHECK(out[size_t(i)] == ref[size_t(1000 + i)]);
    CHECK(out[size_t(len)] == 0x1234);
  }
}
