// Printing: the YAML dump of a Config and the README's table of keys.
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "config/config_keys.h"
#include "config/config_load.h"

namespace rfa {
namespace {

bool is_text(const ConfigKey& key) { return std::holds_alternative<FieldRef<std::string>>(key.field); }

// A YAML double-quoted scalar: always safe, whatever the path holds.
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += ch;
    }
  }
  return out + "\"";
}

std::string_view leaf_of(const char* path) {
  std::string_view p(path);
  return p.substr(p.find('.') + 1);
}

}  // namespace

std::string config_dump(const Config& config) {
  std::string out = "# rfa configuration: every key (load with --config; override with --set key.path=value)\n";
  std::string_view section;
  for (const ConfigKey& key : config_keys()) {
    std::string_view path(key.path), this_section = path.substr(0, path.find('.'));
    if (this_section != section) {
      section = this_section;
      out += fmt::format("{}:\n", section);
    }
    std::string value = config_key_get(key, config);
    if (is_text(key)) value = quote(value);
    out += fmt::format("  {}: {}  # {}\n", leaf_of(key.path), value, key.help);
  }
  return out;
}

std::string config_keys_markdown() {
  Config defaults;
  std::string out = "| key | default | allowed | meaning |\n|---|---|---|---|\n";
  for (const ConfigKey& key : config_keys()) {
    std::string value = config_key_get(key, defaults);
    if (is_text(key)) value = quote(value);
    std::string allowed = config_key_allowed_text(key);
    if (allowed.empty()) allowed = config_key_expected(key);
    std::string help = key.help;
    for (size_t at = help.find('|'); at != std::string::npos; at = help.find('|', at + 2)) help.replace(at, 1, "\\|");
    for (size_t at = allowed.find('|'); at != std::string::npos; at = allowed.find('|', at + 2))
      allowed.replace(at, 1, "\\|");
    out += fmt::format("| `{}` | `{}` | {} | {} |\n", key.path, value, allowed, help);
  }
  return out;
}

}  // namespace rfa
