#include "train/train_data.h"

#include <filesystem>

#include "core/log.h"
#include "data/data_setup.h"

namespace rfa {

TrainData train_data_ensure(const Config& c, const std::string& tokenizer_path) {
  Tokenizer tokenizer = tokenizer_path.empty() ? tokenizer_ensure(c) : Tokenizer::load(tokenizer_path);
  const std::string tokens_path = config_tokens_path(c.data);
  if (!std::filesystem::exists(tokens_path)) {
    log_info("data", "token file {} missing: creating it", tokens_path);
    token_file_prepare_logged(c, tokenizer);
  }
  TokenFile tokens = TokenFile::open(tokens_path, tokenizer);
  return TrainData{std::move(tokenizer), std::move(tokens)};
}

}  // namespace rfa
