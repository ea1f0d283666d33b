#pragma once
// Errors. A user's mistake throws rfa::Error whose message names the thing,
// the offending value and the fix; main() catches it, logs it and exits non-zero.
// Internal invariants use RFA_ASSERT (always on: it is cheap and outside hot loops).
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace rfa {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// fail("token file {}: vocab {} != tokenizer vocab {}; re-run `rfa data prepare`", path, a, b)
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

[[noreturn]] void assert_failed(const char* expr, const char* file, int line, const std::string& what);

}  // namespace rfa

#define RFA_ASSERT(cond, ...)                                                            \
  do {                                                                                   \
    if (!(cond)) ::rfa::assert_failed(#cond, __FILE__, __LINE__, ::fmt::format("" __VA_ARGS__)); \
  } while (0)
