// `rfa data prepare` / `rfa train` data setup: a corpus that is not text is
// refused before any tokenizer is trained, and a tokenizer trained for a
// preparation that then fails is removed again (never one that was there before).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "io/file_util.h"
#include "data/data_setup.h"
#include "support/corpus.h"
#include "support/temp_dir.h"

using namespace rfa;
using rfa::test::TempDir;

namespace {

Config config_in(const TempDir& dir) {
  Config c;
  c.tokenizer.path = dir / "tok.model";
  c.tokenizer.kind = TokenizerKind::bpe;
  c.tokenizer.vocab_size = 320;
  c.data.corpus = dir.write("corpus.txt", test::corpus_make(300));
  c.data.tokens = dir / "out/corpus.tokens";
  return c;
}

}  // namespace

TEST_CASE("data setup: prepares the tokenizer and the token file") {
  TempDir dir;
  Config c = config_in(dir);
  Tokenizer tok = data_ensure(c, true);
  CHECK(tok.fnv1a64() == Tokenizer::load(c.tokenizer.path).fnv1a64());
  CHECK(TokenFile::open(c.data.tokens, tok).header().tokens > 0);
}

TEST_CASE("data setup: a corpus that is not text is refused before a tokenizer is trained") {
  TempDir dir;
  Config c = config_in(dir);
  std::string bytes = test::corpus_make(300);
  bytes[1234] = '\xC0';  // never valid in UTF-8
  c.data.corpus = dir.write("bad.txt", bytes);
  CHECK_THROWS_WITH_AS(data_ensure(c, true),
                       doctest::Contains(("corpus (data.corpus) " + c.data.corpus +
                                          " is not UTF-8 text: invalid UTF-8 at byte offset 1234 (byte 0xc0)").c_str()),
                       Error);
  CHECK_FALSE(std::filesystem::exists(c.tokenizer.path));
  CHECK_FALSE(std::filesystem::exists(c.data.tokens));
}

TEST_CASE("data setup: a failed preparation removes the tokenizer it trained, never an older one") {
  TempDir dir;
  Config c = config_in(dir);
  dir.write("out", "a file where the token file's directory should be");  // encoding cannot write
  CHECK_THROWS_AS(data_ensure(c, true), Error);
  CHECK_FALSE(std::filesystem::exists(c.tokenizer.path));

  // The tokenizer existed before: a failure leaves it alone.
  Config good = c;
  good.data.tokens = dir / "ok.tokens";
  data_ensure(good, true);
  const std::string before = file_read_all(c.tokenizer.path);
  CHECK_THROWS_AS(data_ensure(c, true), Error);
  CHECK(file_read_all(c.tokenizer.path) == before);
}

TEST_CASE("data setup: without encode_always an existing token file is reused, not re-encoded") {
  TempDir dir;
  Config c = config_in(dir);
  data_ensure(c, true);
  const auto written = std::filesystem::last_write_time(c.data.tokens);
  // The corpus is no longer read: an existing token file is what `rfa train` uses.
  c.data.corpus = dir / "gone.txt";
  CHECK_NOTHROW(data_ensure(c, false));
  CHECK(std::filesystem::last_write_time(c.data.tokens) == written);
  CHECK_THROWS_WITH_AS(data_ensure(c, true), doctest::Contains("gone.txt"), Error);
}

TEST_CASE("data setup: with tokenizer.path and data.tokens \"\", each corpus gets its own tokenizer and token file") {
  // The default config wrote every corpus's tokenizer to data/kjv-bpe2048.model, and the next corpus reused it.
  TempDir dir;
  Config c = config_in(dir);
  c.tokenizer.path.clear();
  c.data.tokens.clear();
  const Tokenizer mine = data_ensure(c, true);
  CHECK(mine.origin() == dir / "corpus-bpe320.model");
  CHECK(std::filesystem::exists(dir / "corpus.txt.tokens"));
  c.data.corpus = dir.write("other.txt", test::corpus_make(300, /*seed=*/7));
  const Tokenizer other = data_ensure(c, true);
  CHECK(other.origin() == dir / "other-bpe320.model");
  CHECK(other.fnv1a64() != mine.fnv1a64());
  CHECK(TokenFile::open(dir / "other.txt.tokens", other).header().tokens > 0);
}
