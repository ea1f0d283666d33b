#pragma once
// The data a training run needs, created on first use: if the tokenizer model
// or the token file named by the config is missing, it is trained/encoded here
// (what `rfa data prepare` does), so `rfa train --config X` works on a fresh
// checkout once the corpus is in place (scripts/get-data.sh).
#include <string>

#include "config/config.h"
#include "data/token_file.h"
#include "tokenizer/tokenizer.h"

namespace rfa {

struct TrainData {
  Tokenizer tokenizer;
  TokenFile tokens;
};

// Throws Error naming the missing corpus and how to fetch it. A non-empty
// `tokenizer_path` (a resumed run: the checkpoint's copy) is loaded instead of
// config.tokenizer.path and never trained; the token file must have been
// encoded by it (TokenFile::open checks its checksum).
TrainData train_data_ensure(const Config& config, const std::string& tokenizer_path = "");

}  // namespace rfa
