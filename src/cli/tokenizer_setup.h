#pragma once
// Config -> tokenizer: what `rfa tokenizer train` and `rfa data prepare` (and
// later training) share. The tokenizer library itself knows nothing of Config files.
#include "config/config.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_train.h"

namespace rfa {

// tokenizer.* keys, the corpus (tokenizer.corpus or data.corpus) and train.seed.
TokenizerTrainOptions tokenizer_train_options(const Config& config);

// Trains the tokenizer named by the config, replacing any file at its path,
// logging what it does and progress while SentencePiece runs.
void tokenizer_train_logged(const Config& config);

// Loads tokenizer.path, first training it from the corpus when the file is
// missing (as Marian builds a missing vocabulary). Warns when an existing
// bpe/unigram model's vocab differs from tokenizer.vocab_size.
Tokenizer tokenizer_ensure(const Config& config);

}  // namespace rfa
