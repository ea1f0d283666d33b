#pragma once
// Strict parsing of a whole text as one number, for options and config values:
// an optional leading '+', then digits that std::from_chars takes entirely (no
// spaces, no trailing characters, no overflow). Unsigned types take no '-'.
#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>

namespace rfa {

template <typename T>
bool parse_integer(std::string_view text, T* value) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;
  if (begin == end) return false;
  auto [ptr, ec] = std::from_chars(begin, end, *value);
  return ec == std::errc{} && ptr == end;
}

// Finite numbers only: "inf" and "nan" are refused.
inline bool parse_number(std::string_view text, double* value) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;
  if (begin == end) return false;
  auto [ptr, ec] = std::from_chars(begin, end, *value);
  return ec == std::errc{} && ptr == end && std::isfinite(*value);
}

}  // namespace rfa
