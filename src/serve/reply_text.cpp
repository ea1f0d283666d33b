#include "serve/reply_text.h"

#include <algorithm>

#include "tokenizer/utf8.h"

namespace rfa {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Bytes of the character a lead byte starts; 0 when it starts none.
size_t utf8_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

}  // namespace

bool utf8_incomplete_start(std::string_view s) {
  if (s.empty()) return false;
  const unsigned char lead = static_cast<unsigned char>(s[0]);
  const size_t n = utf8_length(lead);
  if (n <= s.size()) return false;
  // Complete it with the smallest continuation bytes a valid character could have, and ask
  // the validator (which knows the ranges after E0, ED, F0, F4).
  std::string probe(s);
  while (probe.size() < n)
    probe.push_back(probe.size() == 1 && lead == 0xE0 ? '\xA0' : probe.size() == 1 && lead == 0xF0 ? '\x90' : '\x80');
  return utf8_valid_prefix(probe) == n;
}

ReplyText::ReplyText(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
  for (const std::string& s : stops_) longest_stop_ = std::max(longest_stop_, s.size());
}

void ReplyText::convert() {
  while (!raw_.empty()) {
    const size_t n = utf8_valid_prefix(raw_);
    text_.append(raw_, 0, n);
    raw_.erase(0, n);
    if (raw_.empty() || utf8_incomplete_start(raw_)) return;
    text_.append(kReplacement);  // a byte no valid character starts with here
    raw_.erase(0, 1);
  }
}

void ReplyText::release() {
  // The earliest stop string that begins at or after `searched_`.
  size_t cut = std::string::npos;
  for (const std::string& s : stops_) cut = std::min(cut, text_.find(s, searched_));
  if (cut != std::string::npos) {
    text_.resize(cut);
    raw_.clear();
    stopped_ = true;
    released_ = std::max(released_, cut);
    return;
  }
  // Hold back the longest tail that is the beginning of a stop string.
  size_t hold = 0;
  for (const std::string& s : stops_)
    for (size_t k = std::min(s.size() - 1, text_.size()); k > hold; --k)
      if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  released_ = std::max(released_, text_.size() - hold);
  // A stop can begin only within the held tail from now on.
  searched_ = text_.size() - hold;
}

std::string_view ReplyText::push(std::string_view bytes) {
  delta_.clear();
  if (stopped_) return delta_;
  const size_t before = released_;
  raw_.append(bytes);
  convert();
  release();
  delta_.assign(text_, before, released_ - before);
  return delta_;
}

std::string_view ReplyText::finish() {
  delta_.clear();
  if (stopped_) return delta_;
  const size_t before = released_;
  if (!raw_.empty()) text_.append(kReplacement);  // a character cut off by the end of the reply
  raw_.clear();
  released_ = text_.size();
  delta_.assign(text_, before, released_ - before);
  return delta_;
}

}  // namespace rfa
