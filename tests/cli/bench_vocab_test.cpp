// The benchmarks' vocabulary: model.vocab_size when set, else the tokenizer's file (a char
// tokenizer keeps fewer pieces than its configured upper bound), else its configured size.
#include <doctest/doctest.h>

#include <string>

#include "cli/bench_vocab.h"
#include "config/config_load.h"
#include "support/temp_dir.h"
#include "support/trained_tokenizer.h"
#include "tokenizer/tokenizer.h"

using namespace rfa;

TEST_CASE("bench vocab: model.vocab_size, else the tokenizer's file, else tokenizer.vocab_size") {
  test::TempDir dir;
  Config c = config_load("", {});
  c.tokenizer.path = dir.file("missing.model");
  c.tokenizer.vocab_size = 2048;
  c.model.vocab_size = 0;
  CHECK(config_model_vocab(c) == 2048);  // no file yet: the configured size
  c.tokenizer.path = test::tokenizer_train_into(dir, dir.write("corpus.txt", "abc abc cab\nbca\n"), "c.model",
                                                TokenizerKind::character, 384);
  const int trained = Tokenizer::load(c.tokenizer.path).vocab_size();
  CHECK(trained < 384);
  CHECK(config_model_vocab(c) == trained);  // the file: what the model will have
  c.model.vocab_size = 100;
  CHECK(config_model_vocab(c) == 100);  // set: wins
}
