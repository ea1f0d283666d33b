// token_file_prepare reads the corpus in 1 MiB blocks; these corpora are larger
// than a block so the cuts (at a newline, at a space, inside a line without
// spaces) are exercised.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "data/token_file.h"
#include "support/corpus.h"
#include "support/temp_dir.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_train.h"

using namespace rfa;
using rfa::test::TempDir;

namespace {

Tokenizer train_char(const TempDir& dir) {
  TokenizerTrainOptions o;
  o.corpus = dir.write("train.txt", test::corpus_make(200) + "中文字 é\n");
  o.model_path = dir.file("char.model");
  o.kind = TokenizerKind::character;
  o.vocab_size = 400;
  tokenizer_train(o);
  return Tokenizer::load(o.model_path);
}

std::vector<int32_t> prepare_all(const TempDir& dir, const Tokenizer& tok, const std::string& text) {
  std::string corpus = dir.write("big.txt", text);
  token_file_prepare(corpus, tok, dir.file("big.tokens"), 0.25);
  TokenFile file = TokenFile::open(dir.file("big.tokens"), tok);
  CHECK(file.train().bytes() + file.val().bytes() == static_cast<int64_t>(text.size()));
  std::vector<int32_t> all = file.train().to_vector(), val = file.val().to_vector();
  all.insert(all.end(), val.begin(), val.end());
  return all;
}

}  // namespace

TEST_CASE("token file blocks: many lines across blocks give the same tokens as one encode") {
  TempDir dir;
  Tokenizer tok = train_char(dir);
  std::string text = test::corpus_make(48000, 3);  // ~2.2 MB
  REQUIRE(text.size() > (2u << 20));
  std::vector<int32_t> all = prepare_all(dir, tok, text);
  CHECK(all == tok.encode(text));
}

TEST_CASE("token file blocks: a line longer than a block round-trips, with and without spaces") {
  TempDir dir;
  Tokenizer tok = train_char(dir);
  std::string spaced = test::corpus_make(25000, 5);  // ~1.4 MB on one line
  for (char& c : spaced)
    if (c == '\n') c = ' ';
  std::string dense;  // ~1.3 MB of 3-byte characters, no space, no newline
  while (dense.size() < (1300u << 10)) dense += "中文字";
  std::string text = "first line\n" + spaced + "\n" + dense + "é\nlast";
  std::vector<int32_t> all = prepare_all(dir, tok, text);
  CHECK(tok.decode(all) == text);
  CHECK(all.size() == tok.encode(text).size());  // a char model: one token per character either way
}
