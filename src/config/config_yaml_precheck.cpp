#include "config/config_yaml_precheck.h"

#include <vector>

#include "core/error.h"

namespace rfa {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_flow_indicator(char c) { return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'; }

// A line for a message: without its indentation, at most 60 bytes.
std::string excerpt(std::string_view row) {
  const size_t start = row.find_first_not_of(" \t");
  row = start == std::string_view::npos ? std::string_view{} : row.substr(start);
  while (!row.empty() && is_blank(row.back())) row.remove_suffix(1);
  return row.size() <= 60 ? std::string(row) : std::string(row.substr(0, 57)) + "...";
}

// One pass over the lines, tracking what YAML would make of them: open flow collections, the
// section a block key belongs to, and the last block line a next line may join.
class Precheck {
 public:
  Precheck(std::string_view text, const std::string& origin) : text_(text), origin_(origin) {
    for (size_t at = 0; at <= text.size();) {
      size_t end = text.find('\n', at);
      if (end == std::string_view::npos) end = text.size();
      std::string_view row = text.substr(at, end - at);
      if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
      rows_.push_back({at, row});
      at = end + 1;
    }
  }

  std::string run() {
    std::string out(text_);
    for (size_t i = 0; i < rows_.size(); ++i) {
      const std::string_view row = rows_[i].text;
      const size_t content = row.find_first_not_of(" \t");
      const int indent = static_cast<int>(std::min(row.find_first_not_of(' '), row.size()));
      if (content == std::string_view::npos || row[content] == '#') {  // blank, or only a comment
        for (size_t j = 0; j < std::min(content, row.size()); ++j)
          if (row[j] == '\t') out[rows_[i].begin + j] = ' ';
        continue;
      }
      scan_row(i, content, indent);
    }
    return out;
  }

 private:
  struct Row {
    size_t begin;  // offset in the text
    std::string_view text;
  };
  // The last line that began in block context, which the next one may continue.
  struct Previous {
    int line = 0;  // 0: none
    int indent = 0;
    std::string key;         // its key path, "" when it has no 'key:'
    bool has_value = false;  // something follows its 'key:'
  };
  enum class Token { none, scalar, other };

  // "train.steps" for key "steps" where it stands: in the current section (block) or the open
  // flow mapping.
  std::string path_of(const std::string& key, int indent) const {
    const std::string& outer = depth_ > 0 ? flow_keys_.back() : (indent > 0 ? section_ : empty_);
    return outer.empty() ? key : outer + "." + key;
  }

  void scan_row(size_t i, size_t p, int indent) {
    const std::string_view row = rows_[i].text;
    const int line = static_cast<int>(i) + 1;
    const bool block = depth_ == 0;
    if (block) {
      if (row.substr(0, p).find('\t') != std::string_view::npos)
        fail("{}:{}: a tab in the indentation; YAML indents with spaces only: replace the tab with spaces", origin_,
             line);
      const bool marker = indent == 0 && (row.starts_with("---") || row.starts_with("...")) &&
                          (row.size() == 3 || is_blank(row[3]));
      if (marker || (indent == 0 && row[0] == '%')) {  // a document marker or a directive
        previous_ = {};
        section_.clear();
        return;
      }
    } else if (flow_plain_line_ != 0 && row[p] != ',' && row[p] != '}' && row[p] != ']' && row[p] != ':') {
      fail("{}:{}: {} on line {} goes on here ('{}') without a ',' between them, so YAML would join the two lines "
           "into one value; end it with ',' (or the closing bracket) on line {}",
           origin_, line, flow_plain_key_.empty() ? "the text" : "the value of '" + flow_plain_key_ + "'",
           flow_plain_line_, excerpt(row), flow_plain_line_);
    }
    flow_plain_line_ = 0;

    bool at_start = true;      // a scalar or collection may start here
    bool after_quote = false;  // the last token was a quoted scalar ({"a":1} needs no blank after ':')
    bool last_plain = false;   // the last token was a plain scalar
    std::string scalar;        // the last scalar read: a key when ':' follows
    std::string value_key;     // the key path whose value is read now
    Token first = Token::none;  // the row's first token
    bool key_found = false;     // block: the row has a 'key:' at depth 0, the first of which is row_key
    std::string row_key;
    bool row_value = false;  // a token follows that first 'key:'
    auto token = [&](Token kind) {
      if (first == Token::none) first = kind;
      if (key_found) row_value = true;
    };
    while (p < row.size()) {
      const char c = row[p];
      if (is_blank(c)) {
        ++p;
        continue;
      }
      if (c == '#' && is_blank(row[p - 1])) break;  // p > 0: a row starting with '#' never gets here
      const bool indicator = c == ':' && (p + 1 == row.size() || is_blank(row[p + 1]) ||
                                          (depth_ > 0 && (after_quote || is_flow_indicator(row[p + 1]))));
      if (indicator) {
        value_key = path_of(scalar, indent);
        if (depth_ == 0 && !key_found) key_found = true, row_key = value_key;
        at_start = true, after_quote = false, last_plain = false;
        ++p;
        continue;
      }
      if (at_start && (c == '"' || c == '\'')) {
        token(Token::scalar);
        const size_t end = quote_end(i, p, value_key);
        scalar = std::string(row.substr(p + 1, end - p - 2));
        p = end;
        at_start = false, after_quote = true, last_plain = false;
        continue;
      }
      if (at_start && (c == '{' || c == '[')) {
        token(Token::other);
        flow_keys_.push_back(value_key);
        ++depth_;
        value_key.clear();
        ++p;
        continue;
      }
      if (depth_ > 0 && (c == '}' || c == ']' || c == ',')) {
        token(Token::other);
        if (c != ',') {
          --depth_;
          flow_keys_.pop_back();
        }
        value_key.clear();
        at_start = c == ',', after_quote = false, last_plain = false;
        ++p;
        continue;
      }
      if (at_start && (c == '-' || c == '?') && (p + 1 == row.size() || is_blank(row[p + 1]))) {
        token(Token::other);  // a sequence entry or a complex key: the parser's business
        ++p;
        continue;
      }
      if (at_start && depth_ == 0 && (c == '|' || c == '>'))
        fail("{}:{}: '{}' starts a block scalar, a value of several lines{}; a config value is one line: write it "
             "after the ':'",
             origin_, line, c, value_key.empty() ? "" : " for '" + value_key + "'");
      if (at_start && std::string_view(",]}*@`%").find(c) != std::string_view::npos) {
        token(Token::other);  // starts no scalar here (an alias, a stray indicator): the parser's business
        break;
      }
      if (at_start && (c == '!' || c == '&')) {  // a tag or an anchor: a value may still start after it
        while (p < row.size() && !is_blank(row[p])) ++p;
        continue;
      }
      // A plain scalar: up to ': ', ' #' or, in a flow collection, an indicator.
      token(Token::scalar);
      const size_t start = p;
      while (p < row.size()) {
        const char d = row[p];
        if (d == ':' && (p + 1 == row.size() || is_blank(row[p + 1]) ||
                         (depth_ > 0 && is_flow_indicator(row[p + 1]))))
          break;
        if (is_blank(d) && p + 1 < row.size() && row[p + 1] == '#') break;
        if (depth_ > 0 && is_flow_indicator(d)) break;
        ++p;
      }
      if (p == start) ++p;  // an indicator where no scalar starts ("a [b"): step over it
      scalar = excerpt(row.substr(start, p - start));
      at_start = false, after_quote = false, last_plain = true;
    }
    if (depth_ > 0 && last_plain) {
      flow_plain_line_ = line;
      flow_plain_key_ = value_key;
    }
    if (block) relate_to_previous(line, indent, row, first == Token::scalar && !key_found, row_key, row_value);
  }

  // A block row against the block row before it: YAML joins a row indented under a row that has
  // a value to that value, and a row with no ':' to the rows around it.
  void relate_to_previous(int line, int indent, std::string_view row, bool bare, const std::string& key,
                          bool has_value) {
    const bool under = previous_.line != 0 && indent > previous_.indent;
    // 'key:', then its value on the next line, indented: one line of it. Not after a section's
    // 'train:' (a key at indentation 0 without a '.'), where the line is more likely a key.
    const bool valued_key = previous_.indent > 0 || previous_.key.find('.') != std::string::npos;
    if (bare && under && !previous_.has_value && valued_key) {
      previous_.has_value = true;
      previous_.line = line;
      return;
    }
    if (under && previous_.has_value)
      fail("{}:{}: this line ('{}') is indented under '{}' on line {}, which has a value, so YAML would take it as "
           "more of that value; a config value is one line: join the two, or indent this line like the keys around it",
           origin_, line, excerpt(row), previous_.key, previous_.line);
    if (bare) {
      // The likely intent: "steps 5" -> "steps: 5", "steps:5" -> "steps: 5".
      std::string text = excerpt(row), meant;
      if (const size_t colon = text.find(':'); colon != std::string::npos)
        meant = text.substr(0, colon + 1) + " " + text.substr(colon + 1);
      else if (const size_t space = text.find(' '); space != std::string::npos)
        meant = text.substr(0, space) + ":" + text.substr(space);
      fail("{}:{}: '{}' is not a 'key: value' line (no ':' followed by a space ends a key in it), so YAML would "
           "join it to the lines around it, swallowing their keys; {}",
           origin_, line, text, meant.empty() ? "write 'key: value'" : "did you mean '" + meant + "'?");
    }
    if (indent == 0 && !key.empty()) section_ = key;
    previous_ = {line, indent, key, has_value};
  }

  // The column after the quoted scalar that opens at column p of row i; throws when it does not
  // close on that row, saying where YAML would close it.
  size_t quote_end(size_t i, size_t p, const std::string& key) const {
    const char quote = text_[rows_[i].begin + p];
    const size_t open = rows_[i].begin + p;
    size_t close = std::string_view::npos;
    for (size_t j = open + 1; j < text_.size(); ++j) {
      if (quote == '"' && text_[j] == '\\') {
        ++j;
        continue;
      }
      if (text_[j] != quote) continue;
      if (quote == '\'' && j + 1 < text_.size() && text_[j + 1] == '\'') {
        ++j;
        continue;
      }
      close = j;
      break;
    }
    const std::string_view row = rows_[i].text;
    if (close != std::string_view::npos && close < rows_[i].begin + row.size()) return close - rows_[i].begin + 1;

    const int line = static_cast<int>(i) + 1;
    std::string what = key.empty() ? "" : " for the value of '" + key + "'";
    std::string next;  // the next line with something on it, which YAML would read into the scalar
    for (size_t k = i + 1; k < rows_.size() && next.empty(); ++k)
      if (rows_[k].begin < close || close == std::string_view::npos) next = excerpt(rows_[k].text);
    const std::string swallowed = next.empty() ? "" : fmt::format(" ('{}' included)", next);
    const std::string escape = quote == '"' && row.substr(p).find("\\\"") != std::string_view::npos
                                   ? " (inside double quotes \\\" is a quote character, not the end: write \\\\ for a "
                                     "backslash, or use single quotes)"
                                   : "";
    if (close == std::string_view::npos)
      fail("{}:{}: the quote ({}) opened here{} is never closed, so YAML would read the rest of the file into "
           "it{}; close it on line {}{}",
           origin_, line, quote, what, swallowed, line, escape);
    int close_line = line;
    while (static_cast<size_t>(close_line) < rows_.size() && rows_[close_line].begin <= close) ++close_line;
    fail("{}:{}: the quote ({}) opened here{} closes only on line {}, so YAML would join the lines between into that "
         "value{}; a config value is one line: close the quote on line {}{}",
         origin_, line, quote, what, close_line, swallowed, line, escape);
  }

  std::string_view text_;
  const std::string& origin_;
  std::vector<Row> rows_;
  const std::string empty_;
  int depth_ = 0;                        // open flow collections
  std::vector<std::string> flow_keys_;   // the key path each open flow collection is the value of
  std::string section_;                  // the last key at indentation 0: the section of indented keys
  Previous previous_;
  int flow_plain_line_ = 0;  // a plain scalar ended this line inside a flow collection
  std::string flow_plain_key_;
};

}  // namespace

std::string config_yaml_precheck(std::string_view text, const std::string& origin) {
  return Precheck(text, origin).run();
}

}  // namespace rfa
