#pragma once
// Serialising the 64-byte token file header (layout in token_file.h).
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "data/token_file.h"

namespace rfa {

constexpr char kTokenFileMagic[8] = {'R', 'F', 'A', 'T', 'O', 'K', 'S', '\0'};

// Token width in bytes for a vocab of V: 2 when every id fits in 16 bits.
inline uint32_t token_file_width(int64_t V) { return V <= 65536 ? 2 : 4; }

// The header checksum (bytes 20..23) of the header at `bytes`: its 64 bytes, or 128 when the
// version field (bytes 8..11) says 3 (the caller has checked that many bytes exist).
uint32_t token_file_header_checksum(const unsigned char* bytes);
// The header of h.version (64 or 128 bytes), checksum filled in.
std::vector<unsigned char> token_file_header_bytes(const TokenFileHeader& h);
// Parses and checks a header (magic, version, checksum, fields against the file
// size); throws Error naming the path, the bad field and `rfa data prepare` as the fix.
TokenFileHeader token_file_header_parse(const unsigned char* bytes, size_t file_size, const std::string& path);
// All that TokenFile::open_unchecked checks, over the `size` bytes of a whole token file
// in memory: its length, the header, every token id below the vocab size and, in version 3,
// the document table (token_file_documents_check).
TokenFileHeader token_file_check(const unsigned char* bytes, size_t size, const std::string& path);

// Version 3: byte offset of the document table (after the tokens, 8-byte aligned).
int64_t token_file_table_offset(const TokenFileHeader& h);
// Version 3: documents tile [0, N) in order, each at least one token; response_start within
// its document (before its EOS for alpaca/prompt_completion); every document of a JSON Lines
// format ends with EOS, and every text file but the last; the split at a document start (not
// text) and split_document consistent with it. Throws Error naming the document.
void token_file_documents_check(const TokenSplit& tokens, const DocumentTable& docs, const TokenFileHeader& h,
                                const std::string& path);

// token_file_prepare with a chosen block size (corpus bytes read at a time);
// tests use small blocks to exercise every way a block can end.
constexpr size_t kTokenFileBlockBytes = 1 << 20;
TokenFileStats token_file_prepare_blocks(const std::string& corpus_path, const Tokenizer& tokenizer,
                                         const std::string& out_path, double val_fraction, size_t block_bytes);

}  // namespace rfa
