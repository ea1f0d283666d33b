#include "data/data_setup.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "data/corpus_source.h"
#include "data/token_file_documents.h"

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

// A file removed when this goes out of scope (the text a tokenizer trains on, extracted).
struct RemovedFile {
  std::string path;
  ~RemovedFile() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove(path, ec);
  }
};

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

void corpus_text_check(const Config& config) {
  for (const std::string& file : corpus_source(config.data).files) text_file_check(file, "corpus (data.corpus)");
}

// Whether two paths name the same file or directory: the same path, or two spellings of one.
bool same_path(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  if (fs::path(a).lexically_normal() == fs::path(b).lexically_normal()) return true;
  std::error_code ec;
  return fs::equivalent(a, b, ec);  // false (and ec set) when either is missing
}

// Whether two corpora (data.corpus syntax: a list of files and directories) are the same
// paths in the same order.
bool same_corpus(const std::string& a, const std::string& b) {
  const std::vector<std::string> as = config_corpus_paths(a), bs = config_corpus_paths(b);
  return std::equal(as.begin(), as.end(), bs.begin(), bs.end(), same_path);
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
  // tokenizer.corpus is text; data.corpus is what data.format says.
  const CorpusSource source = config.tokenizer.corpus.empty()
                                  ? corpus_source(o.corpus, config.data.format, config.data.prompt_template)
                                  : corpus_source(o.corpus, DataFormat::text, PromptTemplate::alpaca);
  std::error_code ec;
  auto parent = std::filesystem::path(o.model_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // a failure shows when writing
  RemovedFile extracted;
  o.corpus_recorded = o.corpus;  // the model records the configured corpus, not the extract below
  if (!corpus_is_one_text(source)) {  // several files or JSON Lines: their text, extracted into one file
    extracted.path = o.model_path + ".corpus-" + std::to_string(::getpid()) + ".txt";
    log_info("tokenizer", "extracting the text of {} ({} file(s), {}) into {}", o.corpus, source.files.size(),
             enum_name(source.format), extracted.path);
    corpus_text_write(source, extracted.path);
    o.corpus = extracted.path;
  }
  auto corpus_bytes = std::filesystem::file_size(o.corpus, ec);  // only for the log line
  std::string size = ec ? std::string("unreadable") : fmt::format("{:.1f} MB", corpus_bytes / 1e6);
  log_info("tokenizer", "training a {} tokenizer, vocab {}, on {} ({}) -> {}", enum_name(o.kind), o.vocab_size,
           o.corpus, size, o.model_path);
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
  const CorpusSource source = corpus_source(corpus, config.data.format, config.data.prompt_template);
  log_info("data", "encoding {} ({}) with {} (vocab {}), validation fraction {} -> {}", corpus,
           enum_name(config.data.format), tokenizer.origin(), tokenizer.vocab_size(), config.data.val_fraction,
           tokens_path);
  std::error_code ec;
  auto parent = std::filesystem::path(tokens_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // a failure shows when writing
  TokenFileStats stats;
  {
    Heartbeat heartbeat("data", "encoding " + corpus);
    stats = corpus_is_one_text(source)
                ? token_file_prepare(source.files[0], tokenizer, tokens_path, config.data.val_fraction)
                : token_file_prepare_documents(source, tokenizer, tokens_path, config.data.val_fraction);
  }
  // token_file_prepare logged the token counts; add the text each split holds and the total time.
  log_info("data", "prepared {}: train {} tokens / {:.2f} MB of text, validation {} tokens / {:.2f} MB; {:.1f}s in all",
           tokens_path, stats.train_tokens, stats.train_bytes / 1e6, stats.val_tokens, stats.val_bytes / 1e6,
           timer.seconds());
  return stats;
}

void token_file_format_require(const TokenFile& file, const DataConfig& data) {
  const TokenFileHeader& h = file.header();
  const bool documents = h.version == kTokenFileDocumentsVersion;
  const DataFormat format = documents ? h.format : DataFormat::text;
  const std::string what = documents ? fmt::format("{} documents", enum_name(format)) : "one text (version 2)";
  if (format != data.format)
    fail("token file {} holds {} but data.format is {}; re-run `rfa data prepare` (it encodes data.corpus as "
         "data.format says) or point data.tokens at another file",
         file.path(), what, enum_name(data.format));
  if (format == DataFormat::alpaca && h.prompt_template != 1 + static_cast<uint32_t>(data.prompt_template))
    fail("token file {} holds alpaca examples rendered with template {} but data.template is {}; re-run `rfa data "
         "prepare` or point data.tokens at another file",
         file.path(), enum_name(static_cast<PromptTemplate>(h.prompt_template - 1)), enum_name(data.prompt_template));
}

void data_encode_with(const Config& config, const Tokenizer& tokenizer) {
  corpus_text_check(config);
  token_file_prepare_logged(config, tokenizer);
}

Tokenizer data_ensure(const Config& config, bool encode_always) {
  if (config_generated(config.data)) {  // mqar: written whole by `rfa data mqar`, nothing to encode
    const std::string tokens = config_tokens_path(config.data), tokenizer = config_tokenizer_path(config);
    if (encode_always)
      fail("data.format {} is generated, not encoded from a corpus: run `rfa data mqar --out DIR ...` and train with "
           "--config DIR/mqar.yaml (docs/recall.md)",
           enum_name(config.data.format));
    for (const std::string& path : {tokens, tokenizer})
      if (!std::filesystem::exists(path))
        fail("{} does not exist; data.format {} is written by `rfa data mqar --out DIR ...`, whose DIR/mqar.yaml names "
             "its token file and tokenizer (docs/recall.md)",
             path, enum_name(config.data.format));
    return Tokenizer::load(tokenizer);
  }
  const bool encode = encode_always || !std::filesystem::exists(config_tokens_path(config.data));
  if (encode) corpus_text_check(config);  // before a tokenizer is trained from it
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
