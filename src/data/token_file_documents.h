#pragma once
// Encoding a corpus of documents into a version 3 token file (layout in token_file.h):
// several text files (joined by EOS), or JSON Lines documents and instruction examples
// (each followed by EOS; data/corpus_source.h). Streamed: memory stays ~ a few blocks
// (and the longest line) whatever the corpus size; JSON Lines blocks are parsed and
// encoded on all threads. The document table goes to a temporary file beside the
// output as it grows and is appended at the end.
//
// Validation split: text, the last floor(N * val_fraction) tokens, as in version 2; the
// JSON Lines formats, whole documents: the last max(1, floor(D * val_fraction)) of them
// (the split by example of instruction data), which needs at least 2 documents.
#include <cstddef>
#include <string>

#include "data/corpus_source.h"
#include "data/token_file.h"

namespace rfa {

// Throws Error naming the file (and line) for a missing or non-text corpus, a line that is
// not a document of the format, a tokenizer without an EOS id; leaves no file behind then.
TokenFileStats token_file_prepare_documents(const CorpusSource& source, const Tokenizer& tokenizer,
                                            const std::string& out_path, double val_fraction,
                                            size_t block_bytes = 1 << 20);

}  // namespace rfa
