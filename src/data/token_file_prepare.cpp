// token_file_prepare: stream one text file through the tokenizer into a token file
// (version 2). Several files and JSON Lines corpora: token_file_documents.cpp.
#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "data/token_file.h"
#include "data/token_file_format.h"
#include "data/token_file_writer.h"

namespace rfa {

TokenFileStats token_file_prepare(const std::string& corpus_path, const Tokenizer& tok, const std::string& out_path,
                                  double val_fraction) {
  return token_file_prepare_blocks(corpus_path, tok, out_path, val_fraction, kTokenFileBlockBytes);
}

TokenFileStats token_file_prepare_blocks(const std::string& corpus_path, const Tokenizer& tok,
                                         const std::string& out_path, double val_fraction, size_t block_bytes) {
  RFA_ASSERT(block_bytes >= 16, "block of {} bytes", block_bytes);
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))
    fail("data val_fraction {} must be in [0, 1) (0.1 keeps the last 10% of tokens for validation)", val_fraction);
  corpus_file_size(corpus_path);  // refuses a missing or empty corpus before anything is created
  Timer timer;
  TokenFileWriter writer(out_path, tok, kTokenFileVersion);
  const int64_t corpus_size = text_file_encode(corpus_path, tok, writer, block_bytes);
  TokenFileHeader& h = writer.header();
  int64_t val_tokens = static_cast<int64_t>(static_cast<double>(h.tokens) * val_fraction);
  h.split = h.tokens - val_tokens;
  h.val_bytes = writer.bytes_of(h.split, h.tokens, tok);
  h.train_bytes = corpus_size - h.val_bytes;
  writer.commit();

  TokenFileStats s;
  s.corpus_bytes = corpus_size;
  s.tokens = h.tokens;
  s.train_tokens = h.split;
  s.val_tokens = val_tokens;
  s.train_bytes = h.train_bytes;
  s.val_bytes = h.val_bytes;
  s.seconds = timer.seconds();
  log_info("data", "{}: {} bytes -> {} tokens ({:.2f} bytes/token), train {} / val {} tokens, in {:.2f}s -> {}",
           corpus_path, corpus_size, s.tokens, s.tokens ? double(corpus_size) / double(s.tokens) : 0.0,
           s.train_tokens, s.val_tokens, s.seconds, out_path);
  return s;
}

}  // namespace rfa
