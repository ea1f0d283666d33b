#include "data/data_setup.h"

#include <filesystem>

#include "core/heartbeat.h"
#include "config/config_enums.h"
#include "core/error.h"
#include "core/log.h"
#include "io/file_util.h"
#include "io/hash.h"
#include "core/timer.h"
#include "tokenizer/model_proto.h"
#include "tokenizer/text_check.h"

namespace rfa {
namespace {

void require_corpus(const std::string& path, const char* needed_for) {
  if (!std::filesystem::exists(path))
    fail("corpus '{}' (needed for {}) does not exist; fetch it with scripts/get-data.sh or point data.corpus at "
         "a UTF-8 text file",
         path, needed_for);
}

// Removes the tokenizer file at `path` if it still holds the model with `checksum`
// (the one this process trained); never throws, as it runs while an error propagates.
void tokenizer_remove_trained(const std::string& path, uint64_t checksum) {
  try {
    if (fnv1a64(file_read_all(path)) != checksum) return;
    std::error_code ec;
    if (std::filesystem::remove(path, ec))
      log_warn("data", "removed the tokenizer {} trained by this run, since the token file could not be made", path);
  } catch (const std::exception&) {
  }
}

// Whether two corpus paths name the same file: the same path, or two spellings of one file.
bool same_corpus(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  if (fs::path(a).lexically_normal() == fs::path(b).lexically_normal()) return true;
  std::error_code ec;
  return fs::equivalent(a, b, ec);  // false (and ec set) when either is missing
}

// A tokenizer made from another corpus than the configured one still encodes it (byte fallback),
// but its pieces were chosen for the other text; a token file made with it is refused only when
// the tokenizer changes (its fingerprint), never for this. Say so, naming both corpora.
void tokenizer_corpus_check(const Tokenizer& tokenizer, const Config& config) {
  const std::string trained_on = model_proto_training_input(tokenizer.model_bytes());
  const std::string& corpus = config_tokenizer_corpus(config);
  if (trained_on.empty() || same_corpus(trained_on, corpus)) return;  // "": a model that does not say
  Config own = config;
  own.tokenizer.path.clear();
  const std::string own_path = config_tokenizer_path(own);  // where "" would put one of this corpus
  const std::string elsewhere = own_path == tokenizer.origin()
                                    ? "set tokenizer.path to a new file"
                                    : fmt::format("set tokenizer.path to \"\" (then {}) or to a new file", own_path);
  log_warn("tokenizer",
           "{} was trained on {}, not on the configured corpus {} ({}); its pieces fit the other text. For a "
           "tokenizer of {}: {}, or retrain this one with `rfa tokenizer train` (token files made with it are then "
           "refused until `rfa data prepare` remakes them)",
           tokenizer.origin(), trained_on, corpus, config.tokenizer.corpus.empty() ? "data.corpus" : "tokenizer.corpus",
           corpus, elsewhere);
}

}  // namespace

TokenizerTrainOptions tokenizer_train_options(const Config& config) {
  TokenizerTrainOptions o;
  o.corpus = config_tokenizer_corpus(config);
  o.model_path = config_tokenizer_path(config);
  o.kind = config.tokenizer.kind;
  o.vocab_size = config.tokenizer.vocab_size;
  o.max_sentences = config.tokenizer.max_sentences;
  o.character_coverage = config.tokenizer.character_coverage;
  o.seed = config.train.seed;
  return o;
}

void tokenizer_train_logged(const Config& config) {
  TokenizerTrainOptions o = tokenizer_train_options(config);
  require_corpus(o.corpus, "training the tokenizer");
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
  const std::string path = config_tokenizer_path(config);
  if (!std::filesystem::exists(path)) {
    log_info("tokenizer", "{} does not exist yet; training it", path);
    tokenizer_train_logged(config);
  }
  Tokenizer tokenizer = Tokenizer::load(path);
  if (t.kind != TokenizerKind::character && tokenizer.vocab_size() != t.vocab_size)
    log_warn("tokenizer", "{} has vocab {} but tokenizer.vocab_size is {}; using the file (run `rfa tokenizer "
             "train` to rebuild it)", path, tokenizer.vocab_size(), t.vocab_size);
  tokenizer_corpus_check(tokenizer, config);
  return tokenizer;
}

TokenFileStats token_file_prepare_logged(const Config& config, const Tokenizer& tokenizer) {
  Timer timer;
  const std::string& corpus = config.data.corpus;
  const std::string tokens_path = config_tokens_path(config.data);
  require_corpus(corpus, "the token file");
  log_info("data", "encoding {} with {} (vocab {}), validation fraction {} -> {}", corpus, tokenizer.origin(),
           tokenizer.vocab_size(), config.data.val_fraction, tokens_path);
  std::error_code ec;
  auto parent = std::filesystem::path(tokens_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // a failure shows when writing
  TokenFileStats stats;
  {
    Heartbeat heartbeat("data", "encoding " + corpus);
    stats = token_file_prepare(corpus, tokenizer, tokens_path, config.data.val_fraction);
  }
  // token_file_prepare logged the token counts; add the text each split holds and the total time.
  log_info("data", "prepared {}: train {} tokens / {:.2f} MB of text, validation {} tokens / {:.2f} MB; {:.1f}s in all",
           tokens_path, stats.train_tokens, stats.train_bytes / 1e6, stats.val_tokens, stats.val_bytes / 1e6,
           timer.seconds());
  return stats;
}

Tokenizer data_ensure(const Config& config, bool encode_always) {
  const std::string& corpus = config.data.corpus;
  const bool encode = encode_always || !std::filesystem::exists(config_tokens_path(config.data));
  if (encode) {
    require_corpus(corpus, "the token file");
    text_file_check(corpus, "corpus (data.corpus)");
  }
  const std::string tokenizer_path = config_tokenizer_path(config);
  const bool trains = !std::filesystem::exists(tokenizer_path);
  Tokenizer tokenizer = tokenizer_ensure(config);
  if (!encode) return tokenizer;
  try {
    token_file_prepare_logged(config, tokenizer);
  } catch (const std::exception&) {
    if (trains) tokenizer_remove_trained(tokenizer_path, tokenizer.fnv1a64());
    throw;
  }
  return tokenizer;
}

}  // namespace rfa
