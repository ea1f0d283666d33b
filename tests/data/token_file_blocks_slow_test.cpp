// token_file_prepare at its real block size (1 MiB) on a corpus of several blocks.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "data/token_file.h"
#include "support/corpus.h"
#include "support/temp_dir.h"
#include "support/trained_tokenizer.h"
#include "tokenizer/tokenizer.h"

using namespace rfa;
using rfa::test::TempDir;

TEST_CASE("token file blocks (1 MiB): a 2.2 MB corpus gives the same tokens as one encode") {
  TempDir dir;
  const std::string train_text = dir.write("train.txt", test::corpus_make(200));
  Tokenizer tok = test::tokenizer_trained(dir, train_text, "char.model", TokenizerKind::character, 400);

  std::string text = test::corpus_make(48000, 3);
  REQUIRE(text.size() > (2u << 20));
  std::string corpus = dir.write("big.txt", text);
  token_file_prepare(corpus, tok, dir.file("big.tokens"), 0.1);
  TokenFile file = TokenFile::open(dir.file("big.tokens"), tok);
  std::vector<int32_t> all = file.train().to_vector(), val = file.val().to_vector();
  all.insert(all.end(), val.begin(), val.end());
  CHECK(all == tok.encode(text));
  CHECK(file.train().bytes() + file.val().bytes() == static_cast<int64_t>(text.size()));
}
