#pragma once
// Prepared token files: a corpus encoded once by a tokenizer, memory-mapped for training.
//
// Layout (little-endian; docs/reimplementing.md has it byte by byte):
//   0  char[8]  magic "RFATOKS\0"
//   8  u32      format version: 2 (one text) or 3 (documents)
//   12 u32      token width in bytes: 2 when V <= 65536, else 4
//   16 u32      vocab size V of the tokenizer
//   20 u32      header checksum: low 32 bits of FNV-1a 64 over the header bytes (64 in
//               version 2, 128 in version 3) with this field read as 0. Each FNV-1a step is
//               a bijection of the state (xor a byte, multiply by an odd prime), so any
//               change confined to one byte, in particular every single-bit flip, changes it.
//   24 u64      token count N
//   32 u64      split: tokens [0, split) are train, [split, N) validation
//   40 u64      text bytes the train tokens decode to
//   48 u64      text bytes the validation tokens decode to (for bits per byte)
//   56 u64      tokenizer_fnv1a64 of the model that encoded it (io/hash.h; Tokenizer::fnv1a64)
// Version 3 only (a corpus of several files, or JSON Lines documents or examples):
//   64 u64      documents D >= 1
//   72 u64      split_document: documents [0, split_document) start before `split`
//   80 u32      data.format of the corpus: 0 text, 1 jsonl, 2 alpaca, 3 prompt_completion, 4 preference, 5 mqar
//   84 u32      data.template that rendered alpaca prompts: 1 alpaca, 2 alpaca_short; else 0
//   88 u32      the end-of-sequence id that ends each document (text: joins the files)
//   92..127     zero
// Then:
//   H  token[N] unsigned 16- or 32-bit ids (H = 64 in version 2, 128 in version 3)
//   version 3: zero padding to a multiple of 8 bytes, then D x (i64 start, i64 response_start):
//              document d is tokens [start_d, start_{d+1}) (the last ends at N), and its
//              targets from response_start_d on are its response (= start_d for jsonl and
//              text documents: everything is trained on; for mqar only every second one from
//              there, the answers: DocumentTable::response_target).
// A single text file is written as version 2, byte for byte as before documents existed.
// Version 1 (before the header checksum; bytes 20..23 were 0) is refused: token
// files are derived data, rebuilt by `rfa data prepare`.
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "tokenizer/tokenizer.h"

namespace rfa {

constexpr uint32_t kTokenFileVersion = 2;           // one text
constexpr uint32_t kTokenFileDocumentsVersion = 3;  // documents
constexpr int kTokenFileHeaderBytes = 64;           // version 2
constexpr int kTokenFileDocumentsHeaderBytes = 128; // version 3

struct TokenFileHeader {
  uint32_t version = kTokenFileVersion;
  uint32_t token_width = 2;      // bytes per token
  uint32_t vocab_size = 0;       // V
  int64_t tokens = 0;            // N
  int64_t split = 0;             // first validation token
  int64_t train_bytes = 0;
  int64_t val_bytes = 0;
  uint64_t tokenizer_fnv1a64 = 0;
  // Version 3:
  int64_t documents = 0;         // D
  int64_t split_document = 0;    // documents starting before `split`
  DataFormat format = DataFormat::text;
  uint32_t prompt_template = 0;  // 1 + PromptTemplate for alpaca examples, else 0
  int32_t eos_id = 0;
};

// The header bytes of version `version` (64 or 128).
inline int token_file_header_size(uint32_t version) {
  return version >= kTokenFileDocumentsVersion ? kTokenFileDocumentsHeaderBytes : kTokenFileHeaderBytes;
}

// A read-only view of a version 3 file's document table (valid while the TokenFile lives).
// Positions are token indices in the whole file.
class DocumentTable {
 public:
  DocumentTable() = default;
  // answers_only: an mqar file, whose response targets are the answers alone (response_target).
  DocumentTable(const unsigned char* entries, int64_t documents, int64_t tokens, bool answers_only = false)
      : entries_(entries), size_(documents), tokens_(tokens), answers_only_(answers_only) {}

  int64_t size() const { return size_; }  // D; 0 for a version 2 file
  int64_t start(int64_t d) const;           // first token of document d
  int64_t end(int64_t d) const { return d + 1 < size_ ? start(d + 1) : tokens_; }  // one past its last
  int64_t response_start(int64_t d) const;  // its first response token (= start for plain documents)
  // The first document that ends after token `pos` (binary search); size() if none.
  int64_t find(int64_t pos) const;
  // Whether target t[j] of a document whose response starts at index p (both relative to the
  // document's start; j >= p) is trained on as response: every one, or in an mqar file only
  // those at odd offsets j - p, the answers after each query key (docs/recall.md).
  bool response_target(int64_t j, int64_t p) const { return !answers_only_ || (j - p) % 2 == 1; }
  bool answers_only() const { return answers_only_; }

 private:
  const unsigned char* entries_ = nullptr;  // (D, 2) i64
  int64_t size_ = 0;
  int64_t tokens_ = 0;
  bool answers_only_ = false;
};

// A read-only view of one split inside a mapped token file (valid while the TokenFile lives).
class TokenSplit {
 public:
  TokenSplit() = default;
  TokenSplit(const unsigned char* data, int width, int64_t size, int64_t bytes)
      : data_(data), width_(width), size_(size), bytes_(bytes) {}

  int64_t size() const { return size_; }    // tokens in the split
  int64_t bytes() const { return bytes_; }  // corpus bytes they decode to
  int32_t operator[](int64_t i) const;      // 0 <= i < size(); not range checked
  // out[j] = token begin + j for j < count; asserts the range lies in the split.
  void copy(int64_t begin, int64_t count, int32_t* out) const;  // out: (count)
  std::vector<int32_t> to_vector() const;                         // the whole split

 private:
  const unsigned char* data_ = nullptr;  // first token of the split
  int width_ = 2;
  int64_t size_ = 0;
  int64_t bytes_ = 0;
};

class TokenFile {
 public:
  // Maps `path` and validates the header (magic, version, size vs token count,
  // split, token ids < V) and that it was made by `expected` (vocab size and
  // checksum); any mismatch throws Error telling to re-run `rfa data prepare`.
  static TokenFile open(const std::string& path, const Tokenizer& expected);
  // Same checks except the tokenizer match (for inspecting a file).
  static TokenFile open_unchecked(const std::string& path);

  TokenFile(TokenFile&&) noexcept;
  TokenFile& operator=(TokenFile&&) noexcept;
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;
  ~TokenFile();

  const TokenFileHeader& header() const { return header_; }
  const std::string& path() const { return path_; }
  TokenSplit train() const;
  TokenSplit val() const;
  TokenSplit all() const;              // every token; document positions index it
  DocumentTable documents() const;     // version 3; empty for version 2

 private:
  TokenFile() = default;
  std::string path_;
  TokenFileHeader header_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
};

struct TokenFileStats {
  int64_t corpus_bytes = 0;
  int64_t tokens = 0;
  int64_t train_tokens = 0, val_tokens = 0;
  int64_t train_bytes = 0, val_bytes = 0;
  int64_t documents = 0, val_documents = 0;  // version 3
  double seconds = 0;
};

// Encodes `corpus_path` (one text file) with `tokenizer` into `out_path` (temporary name, then
// rename). Streams the corpus in blocks of lines, so memory stays ~ a few MB
// regardless of corpus size. The last floor(N * val_fraction) tokens are the
// validation split; 0 <= val_fraction < 1. Throws Error for a missing or empty
// corpus or one that is not text (text_check.h; naming the byte offset); an
// error leaves no temporary behind, and temporaries of killed earlier runs
// (file_temp_remove_stale) are removed first.
TokenFileStats token_file_prepare(const std::string& corpus_path, const Tokenizer& tokenizer,
                                  const std::string& out_path, double val_fraction = 0.1);

}  // namespace rfa
