#pragma once
// Config -> tokenizer and token file: what `rfa tokenizer train`, `rfa data
// prepare` and `rfa train` share. The tokenizer and token-file libraries
// themselves know nothing of Config.
#include "config/config.h"
#include "data/token_file.h"
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

// Encodes data.corpus with `tokenizer` into the token file (config_tokens_path),
// replacing any file there, logging sizes, time and progress.
TokenFileStats token_file_prepare_logged(const Config& config, const Tokenizer& tokenizer);

// Throws Error when the token file holds another kind of data than data.format (and, for
// alpaca, data.template) says: one text (version 2) for a JSON Lines format, another format
// or template; the fix is to re-run `rfa data prepare` or point data.tokens elsewhere.
void token_file_format_require(const TokenFile& file, const DataConfig& data);

// `rfa data prepare` (encode_always) and `rfa train` (encodes only a missing
// token file): checks that data.corpus is text before training anything, then
// tokenizer_ensure, then encodes. If encoding fails, a tokenizer this call
// trained is removed again, so later runs do not reuse it; a tokenizer that
// existed before is never touched.
Tokenizer data_ensure(const Config& config, bool encode_always);

// `rfa data prepare` of a fine-tune (train.init_from): checks that data.corpus is text,
// then encodes it with `tokenizer` (the parent's); no tokenizer is trained or looked up.
void data_encode_with(const Config& config, const Tokenizer& tokenizer);

}  // namespace rfa
