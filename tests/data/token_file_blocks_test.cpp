// token_file_prepare reads the corpus in blocks; with 64-byte blocks every way a
// block can end (at a newline, before a space, inside a line without spaces at
// a UTF-8 boundary) is exercised on a small corpus.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "data/token_file.h"
#include "data/token_file_format.h"
#include "support/corpus.h"
#include "support/temp_dir.h"
#include "support/trained_tokenizer.h"
#include "tokenizer/tokenizer.h"

using namespace rfa;
using rfa::test::TempDir;

namespace {

Tokenizer train(const TempDir& dir, TokenizerKind kind, int vocab) {
  const std::string corpus = dir.write("train.txt", test::corpus_make(200) + "中文字 é\n");
  return test::tokenizer_trained(dir, corpus, "tok.model", kind, vocab);
}

std::vector<int32_t> prepare_all(const TempDir& dir, const Tokenizer& tok, const std::string& text, size_t block) {
  std::string corpus = dir.write("corpus.txt", text);
  token_file_prepare_blocks(corpus, tok, dir.file("corpus.tokens"), 0.25, block);
  TokenFile file = TokenFile::open(dir.file("corpus.tokens"), tok);
  CHECK(file.train().bytes() + file.val().bytes() == static_cast<int64_t>(text.size()));
  std::vector<int32_t> all = file.train().to_vector(), val = file.val().to_vector();
  all.insert(all.end(), val.begin(), val.end());
  return all;
}

}  // namespace

TEST_CASE("token file blocks: lines cut into blocks give the same tokens as one encode") {
  TempDir dir;
  Tokenizer tok = train(dir, TokenizerKind::bpe, 360);
  std::string text = test::corpus_make(300, 3);
  for (size_t block : {16, 64, 1000}) {
    CAPTURE(block);
    CHECK(prepare_all(dir, tok, text, block) == tok.encode(text));
  }
}

TEST_CASE("token file blocks: lines longer than a block round-trip, with and without spaces") {
  TempDir dir;
  for (TokenizerKind kind : {TokenizerKind::bpe, TokenizerKind::character}) {
    Tokenizer tok = train(dir, kind, 360);
    std::string spaced = test::corpus_make(30, 5);  // ~1.5 KB on one line
    for (char& c : spaced)
      if (c == '\n') c = ' ';
    std::string dense;  // 3- and 4-byte characters, no space, no newline
    while (dense.size() < 1000) dense += "中文字😀";
    std::string text = "first line\n" + spaced + "\n" + dense + "é\nlast";
    for (size_t block : {16, 17, 18, 19, 64}) {
      CAPTURE(block);
      std::vector<int32_t> all = prepare_all(dir, tok, text, block);
      CHECK(tok.decode(all) == text);
      if (kind == TokenizerKind::character) CHECK(all == tok.encode(text));
    }
  }
}

TEST_CASE("token file blocks: invalid UTF-8 is found in any block, with its offset") {
  TempDir dir;
  Tokenizer tok = train(dir, TokenizerKind::bpe, 360);
  std::string text = test::corpus_make(40, 3);
  size_t offset = text.size() - 50;
  text[offset] = '\xff';
  std::string corpus = dir.write("bad.txt", text);
  std::string expected = fmt::format("byte offset {}", offset);
  for (size_t block : {size_t{16}, size_t{64}, kTokenFileBlockBytes}) {
    CAPTURE(block);
    CHECK_THROWS_WITH_AS(token_file_prepare_blocks(corpus, tok, dir.file("bad.tokens"), 0.1, block),
                         doctest::Contains(expected.c_str()), Error);
  }
}
