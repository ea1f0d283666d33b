#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "io/file_io.h"
#include "io/hash.h"
#include "support/temp_dir.h"

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

TEST_CASE("xxhash64: every length 0..300, four seeds and four alignments hash as rfa's first XXH64 did") {
  // The fold below was computed with the hand-written XXH64 rfa shipped until commit 1f70cfb;
  // it covers the 32-byte stripes and every tail (8-, 4- and 1-byte steps), so checkpoints
  // written then keep matching their stored checksums.
  std::vector<unsigned char> buf(304);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 131 + 17);
  uint64_t fold = 0;
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{0x9E3779B185EBCA87}, ~uint64_t{0}})
    for (size_t n = 0; n <= 300; ++n) fold = (fold ^ xxhash64(buf.data() + n % 4, n, seed)) * 0x100000001B3ull;
  CHECK(fold == 0x5fc2c5c7218a497full);
}

TEST_CASE("file_xxh64: a file read in pieces hashes as its bytes do, whatever its length") {
  test::TempDir dir;
  std::vector<uint8_t> bytes(size_t(9) << 20 | 3);  // two whole 4 MiB pieces and a short third
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  for (size_t n : {size_t(0), size_t(1), size_t(4) << 20, (size_t(4) << 20) + 1, bytes.size()}) {
    CAPTURE(n);
    const std::string path = dir / ("f" + std::to_string(n));
    file_write_durable(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), n));
    CHECK(file_xxh64(path) == hash_hex(xxhash64(bytes.data(), n)));
    CHECK(tokenizer_xxh64(path) == file_xxh64(path));
  }
  CHECK_THROWS_WITH_AS(file_xxh64(dir / "missing"), doctest::Contains("missing"), Error);
}
