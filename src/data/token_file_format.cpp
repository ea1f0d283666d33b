#include "data/token_file_format.h"

#include <cstring>

#include "core/checksum_policy.h"
#include "core/error.h"
#include "io/file_util.h"
#include "io/hash.h"

#include <fmt/format.h>

namespace rfa {
namespace {

template <typename T>
void put(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}
template <typename T>
T get(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

constexpr size_t kChecksumOffset = 20;
constexpr int kMaxFormat = static_cast<int>(DataFormat::mqar);
static_assert(static_cast<int>(DataFormat::text) == 0 && static_cast<int>(DataFormat::jsonl) == 1 &&
                  static_cast<int>(DataFormat::alpaca) == 2 &&
                  static_cast<int>(DataFormat::prompt_completion) == 3 &&
                  static_cast<int>(DataFormat::preference) == 4 && kMaxFormat == 5,
              "the file's format codes (docs/reimplementing.md)");

[[noreturn]] void fail_corrupt(const std::string& path, const std::string& what) {
  fail("token file {} is corrupt: {}; re-run `rfa data prepare` to rebuild it", path, what);
}

}  // namespace

uint32_t token_file_header_checksum(const unsigned char* bytes) {
  const size_t size = static_cast<size_t>(token_file_header_size(get<uint32_t>(bytes + 8)));
  std::vector<unsigned char> b(bytes, bytes + size);
  put<uint32_t>(b.data() + kChecksumOffset, 0);
  return static_cast<uint32_t>(fnv1a64(std::string_view(reinterpret_cast<const char*>(b.data()), b.size())));
}

std::vector<unsigned char> token_file_header_bytes(const TokenFileHeader& h) {
  std::vector<unsigned char> b(static_cast<size_t>(token_file_header_size(h.version)), 0);
  std::memcpy(b.data(), kTokenFileMagic, 8);
  put<uint32_t>(b.data() + 8, h.version);
  put<uint32_t>(b.data() + 12, h.token_width);
  put<uint32_t>(b.data() + 16, h.vocab_size);
  put<int64_t>(b.data() + 24, h.tokens);
  put<int64_t>(b.data() + 32, h.split);
  put<int64_t>(b.data() + 40, h.train_bytes);
  put<int64_t>(b.data() + 48, h.val_bytes);
  put<uint64_t>(b.data() + 56, h.tokenizer_fnv1a64);
  if (h.version >= kTokenFileDocumentsVersion) {
    put<int64_t>(b.data() + 64, h.documents);
    put<int64_t>(b.data() + 72, h.split_document);
    put<uint32_t>(b.data() + 80, static_cast<uint32_t>(h.format));
    put<uint32_t>(b.data() + 84, h.prompt_template);
    put<int32_t>(b.data() + 88, h.eos_id);
  }
  put<uint32_t>(b.data() + kChecksumOffset, token_file_header_checksum(b.data()));
  return b;
}

int64_t token_file_table_offset(const TokenFileHeader& h) {
  const int64_t end = token_file_header_size(h.version) + h.tokens * int64_t(h.token_width);
  return (end + 7) / 8 * 8;
}

TokenFileHeader token_file_header_parse(const unsigned char* b, size_t file_size, const std::string& path) {
  RFA_ASSERT(file_size >= static_cast<size_t>(kTokenFileHeaderBytes), "caller checks the header fits");
  if (std::memcmp(b, kTokenFileMagic, 8) != 0)
    fail("{} is not an rfa token file (bad magic); create it with `rfa data prepare`", path);
  TokenFileHeader h;
  h.version = get<uint32_t>(b + 8);
  h.token_width = get<uint32_t>(b + 12);
  h.vocab_size = get<uint32_t>(b + 16);
  h.tokens = get<int64_t>(b + 24);
  h.split = get<int64_t>(b + 32);
  h.train_bytes = get<int64_t>(b + 40);
  h.val_bytes = get<int64_t>(b + 48);
  h.tokenizer_fnv1a64 = get<uint64_t>(b + 56);
  // Token files are derived data: an old or unknown version is rebuilt, not converted.
  if (h.version == 1)
    fail("token file {} has format version 1 (no header checksum), this rfa reads versions {} and {}; token files "
         "are derived from the corpus, so re-run `rfa data prepare` to rebuild it", path, kTokenFileVersion,
         kTokenFileDocumentsVersion);
  if (h.version != kTokenFileVersion && h.version != kTokenFileDocumentsVersion)
    fail("token file {} has format version {}, this rfa reads versions {} and {}: it is corrupt or from another "
         "rfa; re-run `rfa data prepare` to rebuild it", path, h.version, kTokenFileVersion,
         kTokenFileDocumentsVersion);
  const size_t header = static_cast<size_t>(token_file_header_size(h.version));
  if (file_size < header)
    fail("token file {} is truncated: {} bytes, shorter than its {}-byte header; re-run `rfa data prepare`", path,
         file_size, header);
  const uint32_t stored = get<uint32_t>(b + kChecksumOffset), actual = token_file_header_checksum(b);
  if (checksums_enforced() && stored != actual)
    fail("token file {} is corrupt: its header checksum is {:08x} but its header bytes give {:08x}; re-run `rfa data "
         "prepare` to rebuild it", path, stored, actual);
  if (h.vocab_size == 0 || h.token_width != token_file_width(h.vocab_size))
    fail("token file {} is corrupt: token width {} bytes for vocab {}; re-run `rfa data prepare`", path,
         h.token_width, h.vocab_size);
  const uint64_t body = file_size - header;
  if (h.version == kTokenFileDocumentsVersion) {
    h.documents = get<int64_t>(b + 64);
    h.split_document = get<int64_t>(b + 72);
    const uint32_t format = get<uint32_t>(b + 80);
    h.prompt_template = get<uint32_t>(b + 84);
    h.eos_id = get<int32_t>(b + 88);
    for (size_t i = 92; i < header; ++i)
      if (b[i] != 0) fail_corrupt(path, fmt::format("header byte {} is {}, not 0", i, b[i]));
    if (format > static_cast<uint32_t>(kMaxFormat)) fail_corrupt(path, fmt::format("data format code {}", format));
    h.format = static_cast<DataFormat>(format);
    if (h.prompt_template > 2 || (h.prompt_template != 0) != (h.format == DataFormat::alpaca))
      fail_corrupt(path, fmt::format("template code {} for data format code {}", h.prompt_template, format));
    if (h.eos_id < 0 || static_cast<uint32_t>(h.eos_id) >= h.vocab_size)
      fail_corrupt(path, fmt::format("end-of-sequence id {} outside vocab [0, {})", h.eos_id, h.vocab_size));
    // Sizes bounded by the file before any product: tokens * width + documents * 16 <= body.
    if (h.tokens < 0 || h.documents < 1 || static_cast<uint64_t>(h.tokens) > body / h.token_width ||
        static_cast<uint64_t>(h.documents) > body / 16 ||
        static_cast<uint64_t>(token_file_table_offset(h)) + static_cast<uint64_t>(h.documents) * 16 != file_size)
      fail("token file {} is truncated or corrupt: {} bytes, but its header promises {} tokens of {} bytes and {} "
           "documents; re-run `rfa data prepare`", path, file_size, h.tokens, h.token_width, h.documents);
    if (h.split_document < 0 || h.split_document > h.documents)
      fail_corrupt(path, fmt::format("split document {} of {}", h.split_document, h.documents));
  } else if (h.tokens < 0 || static_cast<uint64_t>(h.tokens) > body / h.token_width ||
             header + static_cast<uint64_t>(h.tokens) * h.token_width != file_size) {
    fail("token file {} is truncated or corrupt: {} bytes, but its header promises {} tokens of {} bytes ({} bytes); "
         "re-run `rfa data prepare`", path, file_size, h.tokens, h.token_width,
         header + static_cast<uint64_t>(h.tokens) * h.token_width);
  }
  if (h.split < 0 || h.split > h.tokens || h.train_bytes < 0 || h.val_bytes < 0)
    fail("token file {} is corrupt: split {} of {} tokens, {} + {} bytes; re-run `rfa data prepare`", path, h.split,
         h.tokens, h.train_bytes, h.val_bytes);
  return h;
}

void token_file_documents_check(const TokenSplit& tokens, const DocumentTable& docs, const TokenFileHeader& h,
                                const std::string& path) {
  const int64_t D = docs.size(), N = h.tokens;
  const bool examples = h.format == DataFormat::alpaca || h.format == DataFormat::prompt_completion ||
                        h.format == DataFormat::preference || h.format == DataFormat::mqar;
  if (h.format == DataFormat::preference && (D % 2 != 0 || h.split_document % 2 != 0))
    fail_corrupt(path, fmt::format("{} documents split at {}: preference pairs come as two documents", D,
                                   h.split_document));
  int64_t before_split = 0;
  for (int64_t d = 0; d < D; ++d) {
    const int64_t start = docs.start(d), response = docs.response_start(d);
    const int64_t end = docs.end(d);
    if ((d == 0 && start != 0) || start >= end || end > N)
      fail_corrupt(path, fmt::format("document {} of {} spans tokens [{}, {}) of {}", d, D, start, end, N));
    if (response < start || response >= end || (!examples && response != start))
      fail_corrupt(path, fmt::format("document {} [{}, {}) has its response at token {}", d, start, end, response));
    const bool ends_with_eos = h.format != DataFormat::text || d + 1 < D;
    if (ends_with_eos && tokens[end - 1] != h.eos_id)
      fail_corrupt(path, fmt::format("document {} ends with token {}, not the end-of-sequence id {}", d,
                                     tokens[end - 1], h.eos_id));
    before_split += start < h.split;
    if (h.format == DataFormat::preference && d % 2 == 1) {  // the rejected answer: the chosen's prompt
      const int64_t prompt = response - start, chosen = docs.start(d - 1);
      if (docs.response_start(d - 1) - chosen != prompt)
        fail_corrupt(path, fmt::format("the two answers of pair {} (documents {} and {}) have prompts of {} and {} "
                                       "tokens", d / 2, d - 1, d, docs.response_start(d - 1) - chosen, prompt));
      for (int64_t j = 0; j < prompt; ++j)
        if (tokens[chosen + j] != tokens[start + j])
          fail_corrupt(path, fmt::format("the two answers of pair {} have different prompts (token {})", d / 2, j));
    }
  }
  if (before_split != h.split_document)
    fail_corrupt(path, fmt::format("split document {}, but {} documents start before the split at token {}",
                                   h.split_document, before_split, h.split));
  if (h.format != DataFormat::text && h.split != (h.split_document < D ? docs.start(h.split_document) : N))
    fail_corrupt(path, fmt::format("the split at token {} is not the start of document {}", h.split,
                                   h.split_document));
}

}  // namespace rfa
