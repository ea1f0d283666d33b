#pragma once
// Checks for integer command-line options. CLI11's own do not fit: its
// PositiveNumber prints DBL_MAX (309 digits) as the bound, and its conversion
// to an unsigned type turns "-1" into 2^64-1 without a word. These parse the
// text themselves and say the allowed range readably:
//   --stride: -1 is not an integer in [0, 2^31-1]
// Usage: cmd->add_option("--stride", stride)->check(cli_integer<int>(0));
#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>

#include "config/config.h"

namespace rfa {

CLI::Validator cli_integer_in(int64_t min, int64_t max);
CLI::Validator cli_unsigned_integer();  // [0, 2^64-1], no sign

// [min, the largest T] (or [min, max]) for an option stored in an integer of type T.
template <typename T>
CLI::Validator cli_integer(int64_t min, int64_t max = std::numeric_limits<T>::max()) {
  if constexpr (std::is_same_v<T, uint64_t>) return cli_unsigned_integer();
  else return cli_integer_in(min, max);
}

// --precision fp32|bf16 for the commands that run a trained model: the matrix
// products on fp32 weights or on bf16 copies (docs/bf16.md).
void cli_add_precision(CLI::App& cmd, Precision& precision);

}  // namespace rfa
