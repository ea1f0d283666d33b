#pragma once
// Numbers as people read them in messages: a bound such as INT64_MAX or
// DBL_MAX must not print as a 19- or 309-digit string.
#include <cstdint>
#include <string>

namespace rfa {

// From 2^20 up, powers of two and their predecessors print as "2^24",
// "2^63-1"; other integers in full ("65536", "-3", "3000000").
std::string integer_text(int64_t value);
std::string integer_text(uint64_t value);
// Integral values as integer_text (any size: 1e300 as "1e+300"), others in the
// shortest form that reads back ("0.05"); infinities as "inf".
std::string number_text(double value);

}  // namespace rfa
