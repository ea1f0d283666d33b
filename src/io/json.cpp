#include "io/json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/error.h"

namespace rfa {
namespace {

constexpr int kMaxDepth = 32;

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : s_(text), source_(source) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_space();
    if (pos_ != s_.size()) error("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void error(std::string_view what) {
    fail("{}: malformed JSON at byte {}: {}", source_, pos_, what);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  char peek() {
    if (pos_ >= s_.size()) error("unexpected end of text");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) error(fmt::format("expected '{}'", c));
    ++pos_;
  }
  void literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) error("unknown literal");
    pos_ += word.size();
  }

  JsonValue value(int depth) {
    if (depth > kMaxDepth) error("nested too deeply");
    skip_space();
    JsonValue v;
    char c = peek();
    if (c == '{') {
      v.kind = JsonValue::Kind::object;
      ++pos_;
      skip_space();
      if (peek() == '}') {
        ++pos_;
        return v;
      }
      for (;;) {
        skip_space();
        std::string key = string();
        if (v.find(key) != nullptr) error(fmt::format("duplicate key \"{}\"", key));
        skip_space();
        expect(':');
        v.members.emplace_back(std::move(key), value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = JsonValue::Kind::array;
      ++pos_;
      skip_space();
      if (peek() == ']') {
        ++pos_;
        return v;
      }
      for (;;) {
        v.items.push_back(value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = JsonValue::Kind::string;
      v.text = string();
      return v;
    }
    if (c == 't' || c == 'f') {
      v.kind = JsonValue::Kind::boolean;
      v.boolean = c == 't';
      literal(v.boolean ? "true" : "false");
      return v;
    }
    if (c == 'n') {
      literal("null");
      return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = JsonValue::Kind::number;
      v.text = number();
      return v;
    }
    error(fmt::format("unexpected character (code {})", static_cast<int>(static_cast<unsigned char>(c))));
  }

  bool digit() { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; }
  void digits() {
    if (!digit()) error("expected a digit");
    while (digit()) ++pos_;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  std::string number() {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else {
      digits();
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      digits();
    }
    return std::string(s_.substr(start, pos_ - start));
  }

  uint32_t hex4() {
    if (pos_ + 4 > s_.size()) error("truncated \\u escape");
    uint32_t code = 0;
    auto r = std::from_chars(s_.data() + pos_, s_.data() + pos_ + 4, code, 16);
    if (r.ptr != s_.data() + pos_ + 4) error("bad \\u escape");
    pos_ += 4;
    return code;
  }

  static void append_utf8(std::string& out, uint32_t c) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      char c = peek();
      ++pos_;
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) error("control character inside a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = peek();
      ++pos_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t code = hex4();
          if (code >= 0xD800 && code < 0xDC00) {  // high surrogate: a low one must follow
            if (s_.substr(pos_, 2) != "\\u") error("unpaired surrogate");
            pos_ += 2;
            uint32_t low = hex4();
            if (low < 0xDC00 || low >= 0xE000) error("unpaired surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            error("unpaired surrogate");
          }
          append_utf8(out, code);
          break;
        }
        default: error("unknown escape");
      }
    }
  }

  std::string_view s_;
  std::string_view source_;
  size_t pos_ = 0;
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

JsonValue json_parse(std::string_view text, std::string_view source) { return Parser(text, source).document(); }

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
