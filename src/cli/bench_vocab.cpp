#include "cli/bench_vocab.h"

#include <filesystem>
#include <string>

#include "tokenizer/tokenizer.h"

namespace rfa {

int config_model_vocab(const Config& config) {
  if (config.model.vocab_size > 0) return config.model.vocab_size;
  const std::string tokenizer_path = config_tokenizer_path(config);
  return std::filesystem::exists(tokenizer_path) ? Tokenizer::load(tokenizer_path).vocab_size()
                                                 : config.tokenizer.vocab_size;
}

}  // namespace rfa
