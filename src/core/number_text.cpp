#include "core/number_text.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>

namespace rfa {
namespace {

std::string magnitude_text(uint64_t a, const char* sign) {
  if (a >= (uint64_t(1) << 20)) {
    if (std::has_single_bit(a)) return fmt::format("{}2^{}", sign, std::countr_zero(a));
    if (std::has_single_bit(a + 1)) return fmt::format("{}2^{}-1", sign, std::countr_zero(a + 1));
  }
  return fmt::format("{}{}", sign, a);
}

}  // namespace

std::string integer_text(uint64_t v) {
  if (v == UINT64_MAX) return "2^64-1";  // a + 1 would wrap
  return magnitude_text(v, "");
}

std::string integer_text(int64_t v) {
  const uint64_t a = v < 0 ? uint64_t(0) - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  return magnitude_text(a, v < 0 ? "-" : "");
}

std::string number_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  const double a = std::fabs(v);
  if (a == std::floor(a) && a < 0x1p63) return integer_text(static_cast<int64_t>(v));
  if (a == 0x1p63 || a == 0x1p64) return fmt::format("{}2^{}", v < 0 ? "-" : "", a == 0x1p63 ? 63 : 64);
  return fmt::format("{}", v);
}

}  // namespace rfa
