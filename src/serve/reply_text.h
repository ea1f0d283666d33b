#pragma once
// The text of one reply as its tokens arrive: token bytes assembled into valid UTF-8 (a
// character split over byte-fallback tokens waits for its last byte; a byte that can
// neither start nor continue one becomes U+FFFD), cut before the first stop string. What
// push() releases is final: never half a character, never text that might still turn out
// to begin a stop string (that part is held back until it cannot).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rfa {

class ReplyText {
 public:
  explicit ReplyText(std::vector<std::string> stops = {});

  // Adds one token's bytes; returns the newly released text (possibly empty), valid until
  // the next call.
  std::string_view push(std::string_view bytes);
  // The reply is over: releases what was held back (a partial character as U+FFFD).
  std::string_view finish();

  bool stopped() const { return stopped_; }  // a stop string appeared (it is not in text())
  // The reply so far: released() bytes sent, the rest held back; after a stop, without it.
  const std::string& text() const { return text_; }
  size_t released() const { return released_; }

 private:
  void convert();     // raw_ -> text_
  void release();     // moves released_ as far as the stop strings allow

  std::vector<std::string> stops_;
  size_t longest_stop_ = 0;
  std::string raw_;   // bytes not yet a whole character
  std::string text_;  // valid UTF-8: [0, released_) sent, the rest held
  size_t released_ = 0;
  size_t searched_ = 0;  // text_ before this cannot contain the start of a stop
  bool stopped_ = false;
  std::string delta_;
};

// True when `bytes` (shorter than a whole character) can still become a valid UTF-8 character.
bool utf8_incomplete_start(std::string_view bytes);

}  // namespace rfa
