#pragma once
// Writing a token file (layout in token_file.h): what the one-text writer
// (token_file_prepare.cpp) and the documents writer (token_file_documents.cpp) share.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/token_file.h"

namespace rfa {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Where a block of text may end without splitting a piece the tokenizer would have formed:
// after its last newline (pieces never contain '\n', a byte token), else before its last
// space, else at a UTF-8 character boundary.
size_t block_cut(std::string_view buf);

// Cuts `block` into pieces of at most piece_bytes (where block_cut would) and encodes them,
// on all threads when the block is large, into ids[k]; `pieces` and `ids` are reused.
void encode_pieces(const Tokenizer& tok, std::string_view block, size_t piece_bytes,
                   std::vector<std::string_view>& pieces, std::vector<std::vector<int32_t>>& ids);

// The ids of `text` (any length: encoded in pieces as above), appended to `out`. Throws Error
// naming `where` when the tokenizer does not give back the text's bytes.
void encode_text(const Tokenizer& tok, std::string_view text, const std::string& where, std::vector<int32_t>& out);

// A token file under a temporary name beside `out_path` (temporaries of killed runs removed
// first): a provisional header, the tokens as they come, anything after them, then the final
// header and a rename (commit). Destroyed uncommitted, it removes the temporary.
class TokenFileWriter {
 public:
  TokenFileWriter(const std::string& out_path, const Tokenizer& tok, uint32_t version);
  ~TokenFileWriter();
  TokenFileWriter(const TokenFileWriter&) = delete;
  TokenFileWriter& operator=(const TokenFileWriter&) = delete;

  TokenFileHeader& header() { return header_; }  // version, width, vocab, tokenizer filled in; tokens counted
  void write(const std::vector<int32_t>& ids);   // appends tokens
  // Text bytes the written tokens [begin, end) decode to (reads them back).
  int64_t bytes_of(int64_t begin, int64_t end, const Tokenizer& tok);
  void append_raw(const void* data, size_t bytes);  // after the last token (seeks to the end first)
  void commit();  // writes header(), closes and renames onto the output path
  const std::string& temp_path() const { return temp_; }

 private:
  std::string out_path_, temp_;
  File file_;
  TokenFileHeader header_;
  std::vector<unsigned char> scratch_;
  bool committed_ = false;
};

// The size of corpus file `path`; throws Error naming it and the fix when it is missing, not
// a regular file or empty.
int64_t corpus_file_size(const std::string& path);

// Streams the text file `path` (checked to be text) through the tokenizer in blocks of
// block_bytes into `writer`; returns the file's size in bytes. Memory stays ~ a few blocks.
int64_t text_file_encode(const std::string& path, const Tokenizer& tok, TokenFileWriter& writer, size_t block_bytes);

}  // namespace rfa
