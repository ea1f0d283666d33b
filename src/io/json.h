#pragma once
// A small JSON reader and string quoting, enough for safetensors headers and
// state.json. Not a general library: strict RFC 8259 grammar, nesting depth
// limited to 32, numbers kept as their source text so 64-bit integers survive
// exactly. Errors are rfa::Error with the byte offset.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rfa {

struct JsonValue {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  std::string text;  // string contents (unescaped), or a number's source text
  std::vector<JsonValue> items;                              // array
  std::vector<std::pair<std::string, JsonValue>> members;    // object, in file order

  const JsonValue* find(std::string_view key) const;  // object member or nullptr
  // Typed accessors; throw rfa::Error naming `what` if the value has another kind
  // or the number does not fit.
  int64_t as_int64(std::string_view what) const;
  uint64_t as_uint64(std::string_view what) const;
  double as_double(std::string_view what) const;  // null reads as NaN
  const std::string& as_string(std::string_view what) const;
};

// Parses exactly one JSON value (surrounding whitespace allowed). Duplicate
// object keys are an error. `source` names the file in messages.
JsonValue json_parse(std::string_view text, std::string_view source);

// "..." with quotes, backslashes and control characters escaped.
std::string json_quote(std::string_view s);

// A double as JSON: shortest round-trip form, or null for NaN/inf.
std::string json_number(double x);

}  // namespace rfa
