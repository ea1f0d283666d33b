#include "tokenizer/tokenizer_train.h"

#include <sentencepiece_trainer.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <unordered_map>

#include "core/error.h"
#include "io/file_util.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/timer.h"
#include "tokenizer/model_proto.h"
#include "tokenizer/text_check.h"
#include "tokenizer/tokenizer.h"

// Present in libsentencepiece 0.1.97 but not declared in its public headers;
// 2 = errors only (its INFO lines would flood our log).
namespace sentencepiece::logging {
void SetMinLogLevel(int level);
}

namespace rfa {
namespace {

// SentencePiece drops sentences longer than max_sentence_length; we cut long
// lines into pieces of at most this many bytes instead, so no text is lost.
constexpr size_t kMaxPieceBytes = 4096;

// Where to cut a line longer than kMaxPieceBytes: before the last space in the
// first kMaxPieceBytes bytes (a word boundary for SentencePiece), else at the
// last UTF-8 character boundary.
size_t cut_position(std::string_view text) {
  std::string_view head = text.substr(0, kMaxPieceBytes);
  size_t space = head.find_last_of(' ');
  if (space != std::string_view::npos && space > 0) return space;
  size_t cut = kMaxPieceBytes;
  while (cut > 1 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut;
}

// Streams the corpus one line (or piece of a long line) at a time; skips empty lines.
class CorpusLines final : public sentencepiece::SentenceIterator {
 public:
  explicit CorpusLines(const std::string& path) : in_(path, std::ios::binary) { Next(); }

  bool done() const override { return done_; }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override {
    if (in_.bad()) return sentencepiece::util::Status(sentencepiece::util::StatusCode::kInternal, "read error");
    return sentencepiece::util::Status();
  }
  void Next() override {
    while (rest_.empty()) {
      if (!std::getline(in_, line_)) {
        done_ = true;
        return;
      }
      rest_ = line_;
    }
    size_t n = rest_.size() <= kMaxPieceBytes ? rest_.size() : cut_position(rest_);
    value_.assign(rest_.substr(0, n));
    rest_.remove_prefix(n);
    ++pieces_;
  }
  int64_t pieces() const { return pieces_; }

 private:
  std::ifstream in_;
  std::string line_;
  std::string_view rest_;  // unread part of line_
  std::string value_;
  bool done_ = false;
  int64_t pieces_ = 0;
};

const char* model_type_name(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::bpe: return "bpe";
    case TokenizerKind::unigram: return "unigram";
    case TokenizerKind::character: return "char";
  }
  RFA_ASSERT(false, "unknown TokenizerKind {}", static_cast<int>(kind));
  return "";
}

// Turns SentencePiece's status text into an error with the fix in our terms.
[[noreturn]] void fail_training(const TokenizerTrainOptions& o, const std::string& why, int64_t pieces) {
  std::smatch m;
  if (pieces == 0)
    fail("tokenizer corpus {} has no non-empty lines; point tokenizer.corpus (or data.corpus) at a text file",
         o.corpus);
  if (std::regex_search(why, m, std::regex(R"(Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+))")))
    fail("tokenizer vocab_size {} is too large for corpus {} ({} model); set tokenizer.vocab_size <= {} or use a "
         "larger corpus", o.vocab_size, o.corpus, model_type_name(o.kind), m[2].str());
  if (std::regex_search(why, m, std::regex(R"(Vocabulary size is smaller than required_chars\. (\d+) vs (\d+))")))
    fail("tokenizer vocab_size {} is too small: corpus {} needs {} pieces for its characters plus the 256 byte "
         "tokens; set tokenizer.vocab_size >= {} or lower tokenizer.character_coverage (now {})",
         o.vocab_size, o.corpus, m[2].str(), m[2].str(), o.character_coverage);
  fail("tokenizer training on {} ({} model, vocab {}) failed: {}", o.corpus, model_type_name(o.kind), o.vocab_size,
       why);
}

}  // namespace

void tokenizer_train(const TokenizerTrainOptions& o) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.corpus, ec))
    fail("tokenizer corpus {} does not exist (or is not a file); run `scripts/get-data.sh kjv` or set "
         "tokenizer.corpus", o.corpus);
  if (std::filesystem::file_size(o.corpus, ec) == 0)
    fail("tokenizer corpus {} is empty; point tokenizer.corpus (or data.corpus) at a text file", o.corpus);
  if (o.vocab_size < kTokenizerMinVocab)
    fail("tokenizer vocab_size {} is too small: it must hold 3 control tokens and 256 byte tokens; set it >= {}",
         o.vocab_size, kTokenizerMinVocab);
  if (o.max_sentences <= 0) fail("tokenizer max_sentences {} must be > 0", o.max_sentences);
  if (!(o.character_coverage > 0.0 && o.character_coverage <= 1.0))
    fail("tokenizer character_coverage {} must be in (0, 1]", o.character_coverage);
  if (o.model_path.empty()) fail("tokenizer model path is empty; set tokenizer.path");
  text_file_check(o.corpus, "tokenizer corpus");  // SentencePiece would train on binary data as U+FFFD

  std::unordered_map<std::string, std::string> args = {
      {"model_prefix", ""},  // the model comes back as bytes; we write it ourselves
      {"model_type", model_type_name(o.kind)},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"character_coverage", fmt::format("{}", o.character_coverage)},
      {"input_sentence_size", std::to_string(o.max_sentences)},
      {"shuffle_input_sentence", "true"},
      {"max_sentence_length", std::to_string(2 * kMaxPieceBytes)},
      // Exact round trips: no normalisation, keep every space, no invented leading space.
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "false"},
      {"allow_whitespace_only_pieces", "true"},
      // LLaMA-style: unseen characters (and '\n') become byte tokens; digits stay single.
      {"byte_fallback", "true"},
      {"split_digits", "true"},
      {"num_threads", std::to_string(std::max(1, thread_count()))},
  };
  sentencepiece::logging::SetMinLogLevel(2);
  sentencepiece::SetRandomGeneratorSeed(static_cast<unsigned>(mix64(o.seed) & 0x7fffffffu));

  Timer timer;
  CorpusLines lines(o.corpus);
  if (!lines.status().ok()) fail("cannot read tokenizer corpus {}: {}", o.corpus, std::strerror(errno));
  std::string model;
  auto status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &model);
  if (!status.ok()) fail_training(o, status.ToString(), lines.pieces());
  // The corpus, recorded in the model so that a tokenizer used with another corpus can say which
  // one it was made from (data_setup.cpp). SentencePiece 0.1.97 refuses an "input" option beside a
  // sentence iterator, so it is added to the bytes.
  model = model_proto_with_training_input(std::move(model), o.corpus_recorded.empty() ? o.corpus : o.corpus_recorded);
  // A char model has one piece per distinct character, so its vocab may be below vocab_size.
  int vocab = Tokenizer::from_bytes(model, o.model_path).vocab_size();
  for (const std::string& stale : file_temp_remove_stale(o.model_path))
    log_info("tokenizer", "removed {}, left behind by a tokenizer training that was killed", stale);
  file_write_atomic(o.model_path, model);
  log_info("tokenizer", "trained {} model, vocab {}, on {} ({} lines read) in {:.2f}s -> {} ({} bytes)",
           model_type_name(o.kind), vocab, o.corpus, lines.pieces(), timer.seconds(), o.model_path, model.size());
}

}  // namespace rfa
