#include "cli/cli_checks.h"

#include <fmt/format.h>

#include <string>

#include "config/config_enums.h"
#include "core/number_parse.h"
#include "core/number_text.h"

namespace rfa {

CLI::Validator cli_integer_in(int64_t min, int64_t max) {
  const std::string range = fmt::format("[{}, {}]", integer_text(min), integer_text(max));
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        int64_t v = 0;
        if (parse_integer(text, &v) && v >= min && v <= max) return "";
        return fmt::format("{} is not an integer in {}", text, range);
      },
      "INT in " + range);
}

CLI::Validator cli_unsigned_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t v = 0;
        if (parse_integer(text, &v)) return "";  // from_chars takes no '-' for an unsigned type
        return fmt::format("{} is not an integer in [0, 2^64-1]", text);
      },
      "INT in [0, 2^64-1]");
}

void cli_add_precision(CLI::App& cmd, Precision& precision) {
  cmd.add_option_function<std::string>(
         "--precision", [&precision](const std::string& name) { enum_parse(name, &precision); },
         "Matrix products in fp32, or in bf16 on bf16 weight copies (needs AVX512-BF16; docs/bf16.md)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->default_str("fp32");
}

}  // namespace rfa
