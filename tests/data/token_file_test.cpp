#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/file_util.h"
#include "data/token_file.h"
#include "data/token_file_format.h"
#include "support/corpus.h"
#include "support/temp_dir.h"
#include "support/trained_tokenizer.h"
#include "tokenizer/tokenizer.h"

using namespace rfa;
using rfa::test::TempDir;

namespace {

Tokenizer train(const TempDir& dir, const std::string& corpus, int vocab, const std::string& name,
                TokenizerKind kind = TokenizerKind::bpe) {
  return test::tokenizer_trained(dir, corpus, name, kind, vocab);
}

void patch(const std::string& path, long offset, const std::string& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Overwrites header bytes and recomputes the header checksum, so the damage
// reaches the field checks behind it (as a buggy writer's would).
void patch_header(const std::string& path, long offset, const std::string& bytes) {
  patch(path, offset, bytes);
  const std::string file = file_read_all(path);  // a version 3 header is 128 bytes
  uint32_t sum = token_file_header_checksum(reinterpret_cast<const unsigned char*>(file.data()));
  patch(path, 20, std::string(reinterpret_cast<const char*>(&sum), 4));
}

int count_files(const TempDir& dir) {
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.file(""))) n += e.is_regular_file();
  return n;
}

}  // namespace

TEST_CASE("token file: prepare then open round-trips the corpus, split and byte counts") {
  TempDir dir;
  std::string text = test::corpus_make(300) + "unseen: 中文 😀\tend\n";
  std::string corpus = dir.write("corpus.txt", text);
  Tokenizer tok = train(dir, corpus, 360, "bpe.model");
  TokenFileStats stats = token_file_prepare(corpus, tok, dir.file("corpus.tokens"), 0.1);
  CHECK(count_files(dir) == 3);  // corpus, model, tokens: no temporary left

  TokenFile file = TokenFile::open(dir.file("corpus.tokens"), tok);
  const TokenFileHeader& h = file.header();
  std::vector<int32_t> expected = tok.encode(text);
  CHECK(h.tokens == static_cast<int64_t>(expected.size()));
  CHECK(h.token_width == 2);
  CHECK(h.vocab_size == 360);
  CHECK(h.tokenizer_fnv1a64 == tok.fnv1a64());
  CHECK(h.tokens - h.split == static_cast<int64_t>(h.tokens * 0.1));
  CHECK(std::filesystem::file_size(dir.file("corpus.tokens")) == 64 + 2 * expected.size());

  std::vector<int32_t> train_ids = file.train().to_vector(), val_ids = file.val().to_vector();
  std::vector<int32_t> all = train_ids;
  all.insert(all.end(), val_ids.begin(), val_ids.end());
  CHECK(all == expected);
  CHECK(tok.decode(all) == text);
  // Byte counts (for bits per byte) are exactly the text each split decodes to.
  std::string val_text;
  for (int32_t id : val_ids) val_text += tok.decode_token(id);
  CHECK(file.val().bytes() == static_cast<int64_t>(val_text.size()));
  CHECK(file.train().bytes() + file.val().bytes() == static_cast<int64_t>(text.size()));
  CHECK(text.ends_with(val_text));

  CHECK(stats.tokens == h.tokens);
  CHECK(stats.val_tokens == static_cast<int64_t>(val_ids.size()));
  CHECK(stats.corpus_bytes == static_cast<int64_t>(text.size()));
  CHECK(stats.val_bytes == file.val().bytes());

  // Moving the file keeps the mapping (and splits taken from it) valid.
  TokenSplit train_split = file.train();
  TokenFile moved = std::move(file);
  CHECK(train_split[5] == expected[5]);
  CHECK(moved.train().size() == h.split);
}

TEST_CASE("token file: val_fraction 0 gives an empty validation split; bad fractions fail") {
  TempDir dir;
  std::string corpus = dir.write("corpus.txt", test::corpus_make(100));
  Tokenizer tok = train(dir, corpus, 300, "char.model", TokenizerKind::character);
  token_file_prepare(corpus, tok, dir.file("all.tokens"), 0.0);
  TokenFile file = TokenFile::open(dir.file("all.tokens"), tok);
  CHECK(file.val().size() == 0);
  CHECK(file.val().bytes() == 0);
  CHECK(file.train().size() == file.header().tokens);
  CHECK_THROWS_WITH_AS(token_file_prepare(corpus, tok, dir.file("x.tokens"), 1.0), doctest::Contains("[0, 1)"), Error);
  CHECK_THROWS_AS(token_file_prepare(corpus, tok, dir.file("x.tokens"), -0.1), Error);
}

TEST_CASE("token file: corpus errors name the file and the fix") {
  TempDir dir;
  std::string corpus = dir.write("corpus.txt", test::corpus_make(100));
  Tokenizer tok = train(dir, corpus, 340, "bpe.model");
  CHECK_THROWS_WITH_AS(token_file_prepare(dir.file("missing.txt"), tok, dir.file("x.tokens")),
                       doctest::Contains("missing.txt does not exist"), Error);
  CHECK_THROWS_WITH_AS(token_file_prepare(dir.write("empty.txt", ""), tok, dir.file("x.tokens")),
                       doctest::Contains("is empty"), Error);
  std::string latin1 = dir.write("latin1.txt", "plain line\ncaf\xE9 au lait\n");  // 0xE9 = é in Latin-1
  CHECK_THROWS_WITH_AS(token_file_prepare(latin1, tok, dir.file("x.tokens")),
                       doctest::Contains("is not UTF-8 text: invalid UTF-8 at byte offset 14"), Error);
  CHECK_FALSE(std::filesystem::exists(dir.file("x.tokens")));
  CHECK(count_files(dir) == 4);  // corpus, model, empty, latin1: the failed run left no temporary
}

TEST_CASE("token file: open rejects files that do not match or are damaged") {
  TempDir dir;
  std::string corpus = dir.write("corpus.txt", test::corpus_make(200));
  Tokenizer tok = train(dir, corpus, 340, "a.model");
  std::string good = dir.file("good.tokens");
  token_file_prepare(corpus, tok, good, 0.1);
  std::string bytes = file_read_all(good);
  auto copy = [&](const std::string& name, const std::string& content) { return dir.write(name, content); };

  SUBCASE("another tokenizer with the same vocab: checksum mismatch") {
    Tokenizer other = train(dir, corpus, 340, "b.model", TokenizerKind::unigram);
    CHECK_THROWS_WITH_AS(TokenFile::open(good, other), doctest::Contains("re-run `rfa data prepare`"), Error);
    CHECK_THROWS_WITH_AS(TokenFile::open(good, other), doctest::Contains("checksum"), Error);
  }
  SUBCASE("a tokenizer with another vocab size") {
    Tokenizer other = train(dir, corpus, 350, "c.model");
    CHECK_THROWS_WITH_AS(TokenFile::open(good, other), doctest::Contains("vocab 340, but tokenizer"), Error);
  }
  SUBCASE("wrong magic") {
    std::string path = copy("magic.tokens", bytes);
    patch(path, 0, "XX");
    CHECK_THROWS_WITH_AS(TokenFile::open(path, tok), doctest::Contains("bad magic"), Error);
    CHECK_THROWS_WITH_AS(TokenFile::open(corpus, tok), doctest::Contains("not an rfa token file"), Error);
  }
  SUBCASE("truncated by one byte, or to less than a header") {
    std::string path = copy("short.tokens", bytes.substr(0, bytes.size() - 1));
    CHECK_THROWS_WITH_AS(TokenFile::open(path, tok), doctest::Contains("truncated"), Error);
    path = copy("tiny.tokens", bytes.substr(0, 30));
    CHECK_THROWS_WITH_AS(TokenFile::open(path, tok), doctest::Contains("truncated"), Error);
    path = copy("long.tokens", bytes + "xy");
    CHECK_THROWS_WITH_AS(TokenFile::open(path, tok), doctest::Contains("truncated or corrupt"), Error);
  }
  SUBCASE("other format version") {
    std::string path = copy("version.tokens", bytes);
    patch_header(path, 8, std::string("\x04\0\0\0", 4));
    CHECK_THROWS_WITH_AS(TokenFile::open(path, tok),
                         doctest::Contains("format version 4, this rfa reads versions 2 and 3"), Error);
    path = copy("version3.tokens", bytes);  // a one-text file relabelled as a documents file
    patch_header(path, 8, std::string("\x03\0\0\0", 4));
    CHECK_THROWS_WITH_AS(TokenFile::open(path, tok), doctest::Contains("rfa data prepare"), Error);
  }
  SUBCASE("a version 1 file (no header checksum) is refused with the way to rebuild it") {
    std::string path = copy("v1.tokens", bytes);
    patch(path, 8, std::string("\x01\0\0\0", 4));
    patch(path, 20, std::string(4, '\0'));  // version 1 kept these bytes 0
    CHECK_THROWS_WITH_AS(TokenFile::open(path, tok), doctest::Contains("format version 1 (no header checksum)"), Error);
    CHECK_THROWS_WITH_AS(TokenFile::open(path, tok), doctest::Contains("re-run `rfa data prepare` to rebuild it"),
                         Error);
  }
  SUBCASE("a changed header field is caught by the header checksum") {
    std::string path = copy("field.tokens", bytes);
    patch(path, 40, std::string("\x01", 1));  // train bytes: no other check would notice
    CHECK_THROWS_WITH_AS(TokenFile::open(path, tok), doctest::Contains("is corrupt: its header checksum is"), Error);
  }
  SUBCASE("a token id outside the vocab") {
    std::string path = copy("id.tokens", bytes);
    patch(path, 64 + 2 * 10, "\xff\xff");
    CHECK_THROWS_WITH_AS(TokenFile::open(path, tok), doctest::Contains("id 65535 outside vocab [0, 340)"), Error);
  }
  SUBCASE("split beyond the token count") {
    std::string path = copy("split.tokens", bytes);
    patch_header(path, 32, std::string("\xff\xff\xff\x0f\0\0\0\0", 8));
    CHECK_THROWS_WITH_AS(TokenFile::open(path, tok), doctest::Contains("corrupt: split"), Error);
  }
  SUBCASE("missing file") {
    CHECK_THROWS_WITH_AS(TokenFile::open(dir.file("none.tokens"), tok), doctest::Contains("rfa data prepare"), Error);
  }
  TokenFile ok = TokenFile::open(good, tok);  // the original stays valid throughout
  CHECK(ok.header().tokens > 0);
}

TEST_CASE("token file: every single-bit flip in the header is refused") {
  TempDir dir;
  std::string corpus = dir.write("corpus.txt", test::corpus_make(100));
  Tokenizer tok = train(dir, corpus, 300, "char.model", TokenizerKind::character);
  std::string good = dir.file("good.tokens");
  token_file_prepare(corpus, tok, good, 0.1);
  const std::string bytes = file_read_all(good);
  const auto* header = reinterpret_cast<const unsigned char*>(bytes.data());
  CHECK(token_file_header_parse(header, bytes.size(), good).tokens > 0);

  std::vector<int> accepted;  // bits whose flip went unnoticed
  for (int bit = 0; bit < 8 * kTokenFileHeaderBytes; ++bit) {
    std::string flipped = bytes;  // whole: a flip to version 3 makes the header 128 bytes
    flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
    try {
      token_file_header_parse(reinterpret_cast<const unsigned char*>(flipped.data()), bytes.size(), good);
      accepted.push_back(bit);
    } catch (const Error& e) {
      CAPTURE(bit);
      CHECK(std::string(e.what()).find("rfa data prepare") != std::string::npos);
    }
  }
  CHECK(accepted.empty());

  // The same through the file: a flipped bit in the token count is a checksum error, not a size error.
  std::string path = dir.write("flip.tokens", bytes);
  patch(path, 24, std::string(1, static_cast<char>(bytes[24] ^ 0x01)));
  CHECK_THROWS_WITH_AS(TokenFile::open(path, tok), doctest::Contains("header checksum"), Error);
}

TEST_CASE("token file: a directory or a FIFO as the token file is refused by what it is") {
  TempDir dir;
  std::string corpus = dir.write("corpus.txt", test::corpus_make(100));
  Tokenizer tok = train(dir, corpus, 340, "bpe.model");
  // A directory failed mmap with "No such device"; a FIFO with no writer blocked open forever.
  const std::string sub = dir.file("sub.tokens");
  std::filesystem::create_directory(sub);
  CHECK_THROWS_WITH_AS(TokenFile::open(sub, tok), doctest::Contains("sub.tokens is a directory, not a file"), Error);
  const std::string fifo = dir.file("fifo.tokens");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK_THROWS_WITH_AS(TokenFile::open(fifo, tok), doctest::Contains("is a pipe, device or socket, not a file"),
                       Error);
}
