#include <doctest/doctest.h>

#include <cmath>

#include "io/json.h"
#include "core/error.h"

using namespace rfa;

TEST_CASE("json: parses objects, arrays, strings with escapes and exact 64-bit integers") {
  JsonValue v = json_parse(
      R"( {"a": [1, -2, 3.5e2, true, false, null], "s": "q\"\\\/\n\u00e9\ud83d\ude00", "big": 18446744073709551615} )",
      "test");
  REQUIRE(v.kind == JsonValue::Kind::object);
  const JsonValue* a = v.find("a");
  REQUIRE(a != nullptr);
  REQUIRE(a->items.size() == 6);
  CHECK(a->items[0].as_int64("x") == 1);
  CHECK(a->items[1].as_int64("x") == -2);
  CHECK(a->items[2].as_double("x") == 350.0);
  CHECK(a->items[3].boolean);
  CHECK(std::isnan(a->items[5].as_double("x")));
  CHECK(v.find("s")->as_string("s") == "q\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(v.find("big")->as_uint64("big") == 18446744073709551615ull);
  CHECK(v.find("missing") == nullptr);
}

TEST_CASE("json: rejects malformed text with the byte offset") {
  const char* bad[] = {"",          "{",          "{\"a\":}",    "{\"a\" 1}",   "[1,]",        "[01]",
                       "[1.]",      "[-]",        "\"abc",       "\"\\x\"",     "\"\\ud800\"", "tru",
                       "{} extra",  "{\"a\":1,\"a\":2}", "[1e]",   "\"\x01\"",    "{1:2}"};
  for (const char* text : bad) {
    CAPTURE(text);
    CHECK_THROWS_AS(json_parse(text, "test.json"), Error);
  }
  CHECK_THROWS_WITH_AS(json_parse("[1, 2", "x.json"), doctest::Contains("x.json: malformed JSON at byte 5"), Error);
  std::string deep(100, '[');
  CHECK_THROWS_WITH_AS(json_parse(deep, "deep"), doctest::Contains("nested too deeply"), Error);
}

TEST_CASE("json: typed accessors reject the wrong kind and out-of-range numbers") {
  JsonValue v = json_parse(R"({"f": 1.5, "s": "x", "neg": -1, "huge": 1e999})", "t");
  CHECK_THROWS_WITH_AS(v.find("f")->as_int64("field f"), doctest::Contains("field f must be an integer"), Error);
  CHECK_THROWS_AS(v.find("s")->as_double("s"), Error);
  CHECK_THROWS_AS(v.find("neg")->as_uint64("neg"), Error);
  CHECK_THROWS_AS(v.find("f")->as_string("f"), Error);
  CHECK(std::isinf(v.find("huge")->as_double("huge")));
}

TEST_CASE("json: quoting round-trips through the parser; non-finite numbers become null") {
  std::string raw = "tab\there \"quoted\" back\\slash \x01 ctrl";
  CHECK(json_parse(json_quote(raw), "q").as_string("q") == raw);
  CHECK(json_number(0.1) == "0.1");
  CHECK(json_number(INFINITY) == "null");
  CHECK(json_number(NAN) == "null");
}
