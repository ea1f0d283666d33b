#include "io/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace rfa {
namespace {

constexpr int kMaxDepth = 32;

// A char iterator that records how far the parser has read, so errors our SAX
// handler raises (duplicate key, depth) can name a position like nlohmann's own.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, const char* begin, size_t* consumed) : p_(p), begin_(begin), consumed_(consumed) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    ++p_;
    *consumed_ = static_cast<size_t>(p_ - begin_);
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const CountingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char* begin_;
  size_t* consumed_;
};

// Builds a JsonValue tree from nlohmann's SAX events. nlohmann owns the grammar
// (RFC 8259, UTF-8 checked, non-finite numbers refused); we add what it lets
// through: duplicate keys and nesting deeper than kMaxDepth. Numbers keep their
// source text so 64-bit values survive: a float's as nlohmann read it, an integer's
// printed back (the same text, JSON integers having one spelling; only -0 reads as 0).
class TreeBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit TreeBuilder(const size_t* consumed) : consumed_(consumed) {}

  bool null() override { return add(JsonValue{}); }
  bool boolean(bool val) override {
    JsonValue v;
    v.kind = JsonValue::Kind::boolean;
    v.boolean = val;
    return add(std::move(v));
  }
  bool number_integer(number_integer_t val) override { return add(number(std::to_string(val))); }
  bool number_unsigned(number_unsigned_t val) override { return add(number(std::to_string(val))); }
  bool number_float(number_float_t, const string_t& s) override { return add(number(s)); }
  bool string(string_t& val) override {
    JsonValue v;
    v.kind = JsonValue::Kind::string;
    v.text = std::move(val);
    return add(std::move(v));
  }
  bool binary(binary_t&) override { return refuse(0, "binary values are not JSON"); }
  bool start_object(std::size_t) override { return open(JsonValue::Kind::object); }
  bool key(string_t& val) override {
    JsonValue& object = *stack_.back();
    if (object.find(val) != nullptr) return refuse(*consumed_, fmt::format("duplicate key \"{}\"", val));
    object.members.push_back({std::move(val), JsonValue{}});
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(JsonValue::Kind::array); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    // ex.what() is "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error while
    // parsing value - invalid literal; last read: 'tru'": keep what follows the position.
    std::string_view what = ex.what();
    if (size_t at = what.find(": "); at != std::string_view::npos && what.starts_with("[json.exception.parse_error"))
      what.remove_prefix(at + 2);
    else if (size_t tag = what.find("] "); tag != std::string_view::npos)
      what.remove_prefix(tag + 2);
    // nlohmann counts the character it stopped on; report the offset of that character.
    return refuse(position > 0 ? position - 1 : 0, printable(what));
  }

  JsonValue root;
  size_t error_at = 0;
  std::string error;

 private:
  // nlohmann quotes the bytes it last read, which may be any bytes: keep messages printable.
  static std::string printable(std::string_view s) {
    std::string out;
    for (char c : s) {
      const auto u = static_cast<unsigned char>(c);
      out += u < 0x20 || u >= 0x7F ? fmt::format("\\x{:02x}", u) : std::string(1, c);
    }
    return out;
  }
  static JsonValue number(std::string text) {
    JsonValue v;
    v.kind = JsonValue::Kind::number;
    v.text = std::move(text);
    return v;
  }
  bool refuse(size_t at, std::string what) {
    error_at = at;
    error = std::move(what);
    return false;
  }
  // The slot a new value goes into: the root, the next array item, or the value of the last key.
  JsonValue& slot() {
    if (stack_.empty()) return root;
    JsonValue& parent = *stack_.back();
    if (parent.kind == JsonValue::Kind::array) return parent.items.emplace_back();
    return parent.members.back().second;
  }
  bool add(JsonValue v) {
    slot() = std::move(v);
    return true;
  }
  bool open(JsonValue::Kind kind) {
    if (static_cast<int>(stack_.size()) >= kMaxDepth) return refuse(*consumed_ - 1, "nested too deeply");
    JsonValue& v = slot();
    v.kind = kind;
    stack_.push_back(&v);
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  const size_t* consumed_;
  std::vector<JsonValue*> stack_;  // open containers; a child is only added to the innermost one
};

const char* kind_name(JsonValue::Kind k) {
  switch (k) {
    case JsonValue::Kind::null: return "null";
    case JsonValue::Kind::boolean: return "a boolean";
    case JsonValue::Kind::number: return "a number";
    case JsonValue::Kind::string: return "a string";
    case JsonValue::Kind::array: return "an array";
    case JsonValue::Kind::object: return "an object";
  }
  return "?";
}

template <typename Int>
Int parse_integer(const JsonValue& v, std::string_view what) {
  if (v.kind != JsonValue::Kind::number) fail("{} must be an integer, got {}", what, kind_name(v.kind));
  Int x{};
  auto r = std::from_chars(v.text.data(), v.text.data() + v.text.size(), x);
  if (r.ec != std::errc() || r.ptr != v.text.data() + v.text.size()) {
    fail("{} must be an integer in range, got {}", what, v.text);
  }
  return x;
}

}  // namespace

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

int64_t JsonValue::as_int64(std::string_view what) const { return parse_integer<int64_t>(*this, what); }
uint64_t JsonValue::as_uint64(std::string_view what) const { return parse_integer<uint64_t>(*this, what); }

double JsonValue::as_double(std::string_view what) const {
  if (kind == Kind::null) return std::numeric_limits<double>::quiet_NaN();
  if (kind != Kind::number) fail("{} must be a number, got {}", what, kind_name(kind));
  return std::strtod(text.c_str(), nullptr);  // the grammar was checked by the parser
}

const std::string& JsonValue::as_string(std::string_view what) const {
  if (kind != Kind::string) fail("{} must be a string, got {}", what, kind_name(kind));
  return text;
}

JsonValue json_parse(std::string_view text, std::string_view source) {
  size_t consumed = 0;
  TreeBuilder builder(&consumed);
  const char* begin = text.data();
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(CountingIterator(begin, begin, &consumed),
                                   CountingIterator(begin + text.size(), begin, &consumed), &builder);
  } catch (const nlohmann::json::exception& e) {  // not expected in SAX mode; kept as a clear error
    fail("{}: malformed JSON: {}", source, e.what());
  }
  if (!ok) {
    const size_t at = std::min(builder.error_at, text.size());
    const std::string_view before = text.substr(0, at);
    const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
    const size_t line_start = before.rfind('\n');  // npos + 1 == 0: the first line
    const size_t column = at - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    fail("{}: malformed JSON at line {}, column {} (byte {}): {}", source, line, column, at, builder.error);
  }
  return std::move(builder.root);
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double x) { return std::isfinite(x) ? fmt::format("{}", x) : "null"; }

}  // namespace rfa
