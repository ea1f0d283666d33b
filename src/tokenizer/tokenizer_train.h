#pragma once
// Trains a SentencePiece model (through the library API) from a text corpus.
//   bpe / unigram: LLaMA-style, byte_fallback and split_digits on.
//   character:     SentencePiece "char" model, also with byte_fallback.
// All kinds: identity normalisation, remove_extra_whitespaces=false,
// add_dummy_prefix=false, so decode(encode(s)) == s for any valid UTF-8 s.
// Newlines: SentencePiece reads its training input as one sentence per line
// and never sees '\n'; at encode time '\n' (like any unseen character) falls
// back to its byte token <0x0A>, which every model has. So newlines round-trip
// in all kinds and cost exactly one token, with nothing to escape.
// Long lines are cut into pieces of at most 4096 bytes at spaces (or at a
// UTF-8 boundary) before training instead of being dropped.
#include <cstdint>
#include <string>

#include "config/config.h"

namespace rfa {

struct TokenizerTrainOptions {
  std::string corpus;                // UTF-8 text file
  std::string corpus_recorded;       // recorded in the model as its training input; "" = corpus
  std::string model_path;            // written atomically (temporary name, then rename)
  TokenizerKind kind = TokenizerKind::bpe;
  int vocab_size = 1024;             // V incl. <unk>, <s>, </s>, 256 byte tokens; for character an upper bound
  int64_t max_sentences = 2000000;   // lines sampled for training (SentencePiece input_sentence_size)
  double character_coverage = 1.0;   // bpe/unigram; characters outside it fall back to bytes
  uint64_t seed = 0;                 // sentence sampling seed (training is deterministic for a seed)
};

// Throws Error (naming the path or value and the fix) for a missing or empty
// corpus, one that is not text (text_check.h), a vocab size too small for the
// byte tokens or too large for the corpus. The model is parsed back before it is
// renamed into place, so a failure never leaves or replaces a model file.
void tokenizer_train(const TokenizerTrainOptions& options);

// Smallest vocab_size tokenizer_train accepts: 3 control tokens + 256 bytes + 1.
constexpr int kTokenizerMinVocab = 260;

}  // namespace rfa
