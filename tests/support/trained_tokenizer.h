#pragma once
// A tokenizer trained for a test: the options the tests vary, nothing else.
#include <string>

#include "support/temp_dir.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_train.h"

namespace rfa::test {

// Trains a `kind` tokenizer of `vocab` pieces (for character an upper bound) on the
// text file `corpus` into dir/name; returns the model's path.
inline std::string tokenizer_train_into(const TempDir& dir, const std::string& corpus, const std::string& name,
                                        TokenizerKind kind, int vocab) {
  TokenizerTrainOptions o;
  o.corpus = corpus;
  o.model_path = dir.file(name);
  o.kind = kind;
  o.vocab_size = vocab;
  tokenizer_train(o);
  return o.model_path;
}

inline Tokenizer tokenizer_trained(const TempDir& dir, const std::string& corpus, const std::string& name,
                                   TokenizerKind kind, int vocab) {
  return Tokenizer::load(tokenizer_train_into(dir, corpus, name, kind, vocab));
}

}  // namespace rfa::test
