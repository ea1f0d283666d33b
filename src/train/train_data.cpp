#include "train/train_data.h"

#include <filesystem>

#include "core/log.h"
#include "data/data_setup.h"

namespace rfa {

TrainData train_data_ensure(const Config& c, const std::string& tokenizer_path) {
  const std::string tokens_path = config_tokens_path(c.data);
  const bool missing = !std::filesystem::exists(tokens_path);
  if (missing) log_info("data", "token file {} missing: creating it", tokens_path);
  Tokenizer tokenizer = tokenizer_path.empty() ? data_ensure(c, /*encode_always=*/false)
                                               : Tokenizer::load(tokenizer_path);
  if (missing && !tokenizer_path.empty()) token_file_prepare_logged(c, tokenizer);
  TokenFile tokens = TokenFile::open(tokens_path, tokenizer);
  token_file_format_require(tokens, c.data);
  return TrainData{std::move(tokenizer), std::move(tokens)};
}

}  // namespace rfa
