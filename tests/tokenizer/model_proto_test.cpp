// The training input a SentencePiece model records (tokenizer/model_proto.h): rfa adds it to
// every model it trains, and reads it back without SentencePiece's protobuf classes.
#include <doctest/doctest.h>

#include "tokenizer/model_proto.h"
#include "tokenizer/tokenizer.h"
#include "support/corpus.h"
#include "support/temp_dir.h"
#include "support/trained_tokenizer.h"

using namespace rfa;
using rfa::test::TempDir;

TEST_CASE("model proto: a trained tokenizer records its corpus, and SentencePiece still loads it") {
  TempDir dir;
  const std::string corpus = dir.write("my, text.txt", test::corpus_make(200));  // a comma survives
  const Tokenizer tok = test::tokenizer_trained(dir, corpus, "t.model", TokenizerKind::bpe, 340);
  CHECK(model_proto_training_input(tok.model_bytes()) == corpus);
  CHECK(tok.decode(tok.encode("the LORD said")) == "the LORD said");
}

TEST_CASE("model proto: the input round-trips through the bytes; bytes without one or unparsable give \"\"") {
  CHECK(model_proto_training_input("") == "");
  CHECK(model_proto_training_input(model_proto_with_training_input("", "data/kjv.txt")) == "data/kjv.txt");
  // Appended after other fields (a piece, field 1), a second input adds to the first.
  std::string bytes = std::string("\x0a\x03\x0a\x01x", 5);  // pieces { piece: "x" }
  CHECK(model_proto_training_input(bytes) == "");
  bytes = model_proto_with_training_input(bytes, "a.txt");
  CHECK(model_proto_training_input(bytes) == "a.txt");
  CHECK(model_proto_training_input(model_proto_with_training_input(bytes, "b.txt")) == "a.txt,b.txt");
  // A long input needs a multi-byte length.
  const std::string long_path(300, 'p');
  CHECK(model_proto_training_input(model_proto_with_training_input("", long_path)) == long_path);
  // Truncated or garbage bytes: nothing, never a read past the end.
  const std::string whole = model_proto_with_training_input("", "data/kjv.txt");
  for (size_t n = 1; n < whole.size(); ++n) CHECK(model_proto_training_input(whole.substr(0, n)) == "");
  CHECK(model_proto_training_input("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff") == "");
  CHECK(model_proto_training_input("this is not a protobuf") == "");
}
