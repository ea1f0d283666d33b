#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "io/hash.h"

using namespace rfa;

TEST_CASE("xxhash64: reproduces the reference test vectors") {
  // Values from the xxHash reference (seed 0).
  CHECK(xxhash64("", 0) == 0xEF46DB3751D8E999ull);
  CHECK(xxhash64("a", 1) == 0xD24EC4F1A98C6E5Bull);
  CHECK(xxhash64("abc", 3) == 0x44BC2CF5AD770999ull);
  const char* text = "Nobody inspects the spammish repetition";  // 39 bytes: the 32-byte stripe path
  CHECK(xxhash64(text, std::strlen(text)) == 0xFBCEA83C8A378BF1ull);
  CHECK(hash_hex(0xEF46DB3751D8E999ull) == "ef46db3751d8e999");
  CHECK(hash_hex(0x1ull) == "0000000000000001");
}

TEST_CASE("xxhash64: every single-bit flip in a buffer changes the hash") {
  std::vector<unsigned char> buf(77);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 31 + 7);
  uint64_t base = xxhash64(buf.data(), buf.size());
  for (size_t i = 0; i < buf.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      buf[i] ^= static_cast<unsigned char>(1 << bit);
      CHECK(xxhash64(buf.data(), buf.size()) != base);
      buf[i] ^= static_cast<unsigned char>(1 << bit);
    }
  }
  CHECK(xxhash64(buf.data(), buf.size(), 1) != base);  // the seed matters
}
