#include "train/train_data.h"

#include <filesystem>

#include "config/config_enums.h"
#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "tokenizer/tokenizer_train.h"

namespace rfa {
namespace {

void require_corpus(const std::string& path, const char* needed_for) {
  if (!std::filesystem::exists(path))
    fail("corpus '{}' (needed for {}) does not exist; fetch it with scripts/get-data.sh or point data.corpus at "
         "a UTF-8 text file",
         path, needed_for);
}

}  // namespace

TrainData train_data_ensure(const Config& c, const std::string& tokenizer_path) {
  namespace fs = std::filesystem;
  if (tokenizer_path.empty() && !fs::exists(c.tokenizer.path)) {
    const std::string& corpus = config_tokenizer_corpus(c);
    require_corpus(corpus, "training the tokenizer");
    log_info("data", "tokenizer {} missing: training a {} model (vocab {}) on {}", c.tokenizer.path,
             enum_name(c.tokenizer.kind), c.tokenizer.vocab_size, corpus);
    Timer timer;
    TokenizerTrainOptions o;
    o.corpus = corpus;
    o.model_path = c.tokenizer.path;
    o.kind = c.tokenizer.kind;
    o.vocab_size = c.tokenizer.vocab_size;
    o.max_sentences = c.tokenizer.max_sentences;
    o.character_coverage = c.tokenizer.character_coverage;
    o.seed = c.train.seed;
    if (fs::path parent = fs::path(o.model_path).parent_path(); !parent.empty()) fs::create_directories(parent);
    tokenizer_train(o);
    log_info("data", "tokenizer written to {} in {:.1f} s", o.model_path, timer.seconds());
  }
  Tokenizer tokenizer = Tokenizer::load(tokenizer_path.empty() ? c.tokenizer.path : tokenizer_path);
  const std::string tokens_path = config_tokens_path(c.data);
  if (!fs::exists(tokens_path)) {
    require_corpus(c.data.corpus, "the token file");
    log_info("data", "token file {} missing: encoding {}", tokens_path, c.data.corpus);
    if (fs::path parent = fs::path(tokens_path).parent_path(); !parent.empty()) fs::create_directories(parent);
    TokenFileStats st = token_file_prepare(c.data.corpus, tokenizer, tokens_path, c.data.val_fraction);
    log_info("data", "{} tokens ({} train, {} val) from {} bytes in {:.1f} s", st.tokens, st.train_tokens,
             st.val_tokens, st.corpus_bytes, st.seconds);
  }
  TokenFile tokens = TokenFile::open(tokens_path, tokenizer);
  return TrainData{std::move(tokenizer), std::move(tokens)};
}

}  // namespace rfa
