// ReplyText: token bytes become valid UTF-8 text, cut before the first stop string, and
// nothing released is ever taken back.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "serve/reply_text.h"

using namespace rfa;

namespace {

// Pushes each piece, returns everything released (push and finish).
std::string feed(ReplyText& r, const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) out += r.push(p);
  out += r.finish();
  return out;
}

}  // namespace

TEST_CASE("reply text: a character split over byte tokens waits for its last byte") {
  ReplyText r;
  CHECK(r.push("a\xC3") == "a");  // half of 'é' is held
  CHECK(r.push("\xA9") == "\xC3\xA9");
  CHECK(r.push("\xF0\x9F") == "");  // half an emoji
  CHECK(r.push("\x98\x80!") == "\xF0\x9F\x98\x80!");
  CHECK(r.finish() == "");
}

TEST_CASE("reply text: bytes that cannot become a character are U+FFFD, also one cut off at the end") {
  ReplyText r;
  CHECK(r.push("\xFF" "b") == "\xEF\xBF\xBD" "b");
  CHECK(r.push("\xC3" "c") == "\xEF\xBF\xBD" "c");  // a lead byte followed by no continuation
  CHECK(r.push("\xE2\x82") == "");
  CHECK(r.finish() == "\xEF\xBF\xBD");
  CHECK(utf8_incomplete_start("\xE0\xA0"));
  CHECK_FALSE(utf8_incomplete_start("\xE0\x80"));  // overlong: no valid character starts so
  CHECK_FALSE(utf8_incomplete_start("\xED\xA0"));  // a surrogate
}

TEST_CASE("reply text: a stop string over several tokens is held back, then cut with what follows") {
  ReplyText r({"\nUser:"});
  CHECK(r.push("Hello") == "Hello");
  CHECK(r.push(" there\nU") == " there");  // "\nU" may begin the stop
  CHECK(r.push("se") == "");
  CHECK(r.push("r: more") == "");
  CHECK(r.stopped());
  CHECK(r.text() == "Hello there");
  CHECK(r.finish() == "");
  CHECK(r.push("x") == "");  // nothing after a stop
}

TEST_CASE("reply text: a held tail that turns out not to be a stop is released whole and in order") {
  ReplyText r({"STOP", "ab"});
  CHECK(feed(r, {"xS", "TO", "x", "a", "c"}) == "xSTOxac");
  CHECK_FALSE(r.stopped());
  ReplyText held({"STOP"});
  CHECK(held.push("ST") == "");
  CHECK(held.finish() == "ST");  // the reply ended before the stop could complete
}

TEST_CASE("reply text: the earliest of several stop strings wins, also at the very start") {
  ReplyText r({"c", "ab"});
  CHECK(feed(r, {"xxabc"}) == "xx");
  ReplyText first({"Q"});
  CHECK(feed(first, {"Q", "rest"}) == "");
  CHECK(first.stopped());
  ReplyText none({""});  // an empty stop string stops nothing
  CHECK(feed(none, {"abc"}) == "abc");
}
