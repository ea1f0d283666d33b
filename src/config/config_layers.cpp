#include "config/config_layers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "config/config_enums.h"
#include "config/config_error.h"
#include "config/config_keys.h"
#include "core/number_parse.h"

namespace rfa {
namespace {

constexpr const char* kKey = "attention.layers";

std::string_view trim(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// Splits on `sep`, keeping empty pieces (an empty entry is an error the caller names).
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t at = 0;;) {
    const size_t next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  for (std::string_view t : split(s, ' '))
    if (!trim(t).empty()) out.push_back(trim(t));
  return out;
}

// The attention.* keys an entry may set: all but the kind (the entry's head) and this list.
std::string overridable_keys() {
  std::string out;
  for (const ConfigKey& key : config_keys()) {
    const std::string_view path(key.path);
    if (!path.starts_with("attention.") || path == "attention.kind" || path == kKey) continue;
    out += fmt::format("{}{}", out.empty() ? "" : ", ", path.substr(10));
  }
  return out;
}

// Entry `index` (1-based) applied to a copy of the defaults: its kind and overrides.
AttentionConfig entry_config(const AttentionConfig& defaults, std::string_view entry, int index, int* repeat) {
  const std::vector<std::string_view> parts = tokens(entry);
  auto where = [&] { return fmt::format("'{}' entry {} ('{}')", kKey, index, trim(entry)); };
  if (parts.empty())
    fail_keys({kKey}, "'{}' entry {} is empty (two commas in a row, or one at an end); give a kind there, e.g. "
              "'rfa_gate, softmax'",
              kKey, index);
  std::string_view head = parts[0];
  *repeat = 1;
  if (const size_t star = head.find('*'); star != std::string_view::npos) {
    const std::string_view count = head.substr(0, star);
    if (!parse_integer(count, repeat) || *repeat < 1)
      fail_keys({kKey}, "{}: the repeat count '{}' before '*' must be a whole number >= 1 (e.g. '3*rfa_gate')",
                where(), count);
    head = head.substr(star + 1);
  }
  Config c;
  c.attention = defaults;
  c.attention.layers = "";
  if (!enum_parse(std::string(head), &c.attention.kind))
    fail_keys({kKey}, "{}: unknown kind '{}'; an entry starts with one of {} (then key=value overrides)", where(), head,
              enum_choices(AttentionKind{}));
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos || eq == 0)
      fail_keys({kKey}, "{}: '{}' is not key=value; after the kind an entry takes overrides of attention.* keys, "
                "e.g. 'rfa_gate gate=feature'",
                where(), part);
    const std::string leaf(part.substr(0, eq)), value(part.substr(eq + 1));
    const std::string path = "attention." + leaf;
    const ConfigKey* key = config_key_find(path);
    if (!key || path == "attention.kind" || path == kKey)
      fail_keys({kKey}, "{}: '{}' is not a key an entry can set{}; it takes: {}", where(), leaf,
                key ? " (the kind is the entry's first word)" : "", overridable_keys());
    if (!config_key_set(*key, value, c))
      fail_keys({kKey}, "{}: '{}' expects {}, got '{}'", where(), leaf, config_key_expected(*key), value);
    const std::string bounds = config_key_check(*key, c);
    if (!bounds.empty()) fail_keys({kKey}, "{}: {}", where(), bounds);
  }
  return c.attention;
}

}  // namespace

std::vector<AttentionConfig> config_attention_layers(const AttentionConfig& attention, int n_layers) {
  if (trim(attention.layers).empty()) {
    AttentionConfig one = attention;
    one.layers = "";
    return std::vector<AttentionConfig>(static_cast<size_t>(n_layers), one);
  }
  std::vector<AttentionConfig> layers;
  int index = 0;
  int64_t total = 0;  // layers the list gives (counted, not built, past n_layers)
  for (std::string_view entry : split(attention.layers, ',')) {
    int repeat = 1;
    const AttentionConfig layer = entry_config(attention, entry, ++index, &repeat);
    total += repeat;
    for (int r = 0; r < repeat && int(layers.size()) < n_layers; ++r) layers.push_back(layer);
  }
  if (total != n_layers)
    fail_keys({kKey, "model.n_layers"},
              "'{}' is '{}', which gives {} layers, but 'model.n_layers' is {}; give one entry per layer (N*kind "
              "repeats one, e.g. '{}*rfa_gate, softmax'), or \"\" for attention.* in every layer",
              kKey, attention.layers, total, n_layers, std::max(1, n_layers - 1));
  return layers;
}

}  // namespace rfa
