// The integer option checks: the flag, the value and the range in the message,
// and no silent wrap of "-1" into an unsigned option.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/cli_checks.h"

using namespace rfa;

namespace {

struct Flags {
  int stride = 0;
  int segment = 512;
  int64_t tokens = 0;
  uint64_t seed = 1;
};

// The CLI11 error message of parsing `args`, or "" when they parse.
std::string parse_error(std::vector<std::string> args, Flags* flags = nullptr) {
  Flags local;
  Flags& f = flags ? *flags : local;
  CLI::App app{"test"};
  app.add_option("--stride", f.stride)->check(cli_integer<int>(0));
  app.add_option("--prefill-segment", f.segment)->check(cli_integer<int>(1));
  app.add_option("--max-tokens", f.tokens)->check(cli_integer<int64_t>(0));
  app.add_option("--seed", f.seed)->check(cli_integer<uint64_t>(0));
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("cli checks: out-of-range integers name the flag, the value and the range") {
  CHECK(parse_error({"--stride", "-1"}) == "--stride: -1 is not an integer in [0, 2^31-1]");
  CHECK(parse_error({"--prefill-segment", "0"}) == "--prefill-segment: 0 is not an integer in [1, 2^31-1]");
  CHECK(parse_error({"--prefill-segment", "4294967297"}) ==
        "--prefill-segment: 4294967297 is not an integer in [1, 2^31-1]");
  CHECK(parse_error({"--max-tokens", "1.5"}) == "--max-tokens: 1.5 is not an integer in [0, 2^63-1]");
  CHECK(parse_error({"--seed", "-1"}) == "--seed: -1 is not an integer in [0, 2^64-1]");
  CHECK(parse_error({"--seed", "18446744073709551616"}) == "--seed: 18446744073709551616 is not an integer in [0, 2^64-1]");
}

TEST_CASE("cli checks: values in range parse to themselves, the extremes included") {
  Flags f;
  CHECK(parse_error({"--stride", "0", "--prefill-segment", "1", "--max-tokens", "9223372036854775807", "--seed",
                     "18446744073709551615"},
                    &f) == "");
  CHECK(f.stride == 0);
  CHECK(f.segment == 1);
  CHECK(f.tokens == INT64_MAX);
  CHECK(f.seed == UINT64_MAX);
  CHECK(parse_error({"--seed", "+7"}, &f) == "");
  CHECK(f.seed == 7);
}
