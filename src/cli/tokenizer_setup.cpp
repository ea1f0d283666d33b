#include "cli/tokenizer_setup.h"

#include <filesystem>

#include "cli/heartbeat.h"
#include "config/config_enums.h"
#include "core/log.h"

namespace rfa {

TokenizerTrainOptions tokenizer_train_options(const Config& config) {
  TokenizerTrainOptions o;
  o.corpus = config_tokenizer_corpus(config);
  o.model_path = config.tokenizer.path;
  o.kind = config.tokenizer.kind;
  o.vocab_size = config.tokenizer.vocab_size;
  o.max_sentences = config.tokenizer.max_sentences;
  o.character_coverage = config.tokenizer.character_coverage;
  o.seed = config.train.seed;
  return o;
}

void tokenizer_train_logged(const Config& config) {
  TokenizerTrainOptions o = tokenizer_train_options(config);
  std::error_code ec;
  auto corpus_bytes = std::filesystem::file_size(o.corpus, ec);  // only for the log line
  std::string size = ec ? std::string("unreadable") : fmt::format("{:.1f} MB", corpus_bytes / 1e6);
  log_info("tokenizer", "training a {} tokenizer, vocab {}, on {} ({}) -> {}", enum_name(o.kind), o.vocab_size,
           o.corpus, size, o.model_path);
  auto parent = std::filesystem::path(o.model_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // a failure shows when writing
  Heartbeat heartbeat("tokenizer", "training " + o.model_path);
  tokenizer_train(o);  // logs the vocab it reached and the time
}

Tokenizer tokenizer_ensure(const Config& config) {
  const TokenizerConfig& t = config.tokenizer;
  if (!std::filesystem::exists(t.path)) {
    log_info("tokenizer", "{} does not exist yet; training it", t.path);
    tokenizer_train_logged(config);
  }
  Tokenizer tokenizer = Tokenizer::load(t.path);
  if (t.kind != TokenizerKind::character && tokenizer.vocab_size() != t.vocab_size)
    log_warn("tokenizer", "{} has vocab {} but tokenizer.vocab_size is {}; using the file (run `rfa tokenizer "
             "train` to rebuild it)", t.path, tokenizer.vocab_size(), t.vocab_size);
  return tokenizer;
}

}  // namespace rfa
