#include <doctest/doctest.h>

#include <string>

#include "tokenizer/utf8.h"

using rfa::utf8_valid_prefix;

TEST_CASE("utf8: valid text of every sequence length passes") {
  std::string text = "ascii \t\n é ß Ω 中文 ﻿ 😀 \U0010FFFF";
  CHECK(utf8_valid_prefix(text) == text.size());
  CHECK(utf8_valid_prefix("") == 0);
  CHECK(utf8_valid_prefix(std::string("a\0b", 3)) == 3);  // NUL is valid UTF-8
}

TEST_CASE("utf8: malformed sequences stop the prefix at their first byte") {
  CHECK(utf8_valid_prefix("ab\xE9z") == 2);               // Latin-1 é
  CHECK(utf8_valid_prefix("ab\x80") == 2);                // lone continuation byte
  CHECK(utf8_valid_prefix("a\xC0\xAF") == 1);             // overlong '/'
  CHECK(utf8_valid_prefix("a\xE0\x80\xAF") == 1);         // overlong 3-byte
  CHECK(utf8_valid_prefix("a\xED\xA0\x80") == 1);         // UTF-16 surrogate
  CHECK(utf8_valid_prefix("a\xF4\x90\x80\x80") == 1);     // above U+10FFFF
  CHECK(utf8_valid_prefix("a\xF5\x80\x80\x80") == 1);     // invalid lead byte
  CHECK(utf8_valid_prefix("ok\xE4\xB8") == 2);            // truncated 中
  CHECK(utf8_valid_prefix("ok\xE4\x41\xAD") == 2);        // continuation replaced by ASCII
}
