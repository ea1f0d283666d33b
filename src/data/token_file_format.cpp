#include "data/token_file_format.h"

#include <cstring>

#include "core/error.h"
#include "io/file_util.h"
#include "io/hash.h"

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

}  // namespace

uint32_t token_file_header_checksum(const unsigned char* bytes) {
  std::array<unsigned char, kTokenFileHeaderBytes> b;
  std::memcpy(b.data(), bytes, b.size());
  put<uint32_t>(b.data() + kChecksumOffset, 0);
  return static_cast<uint32_t>(fnv1a64(std::string_view(reinterpret_cast<const char*>(b.data()), b.size())));
}

std::array<unsigned char, kTokenFileHeaderBytes> token_file_header_bytes(const TokenFileHeader& h) {
  std::array<unsigned char, kTokenFileHeaderBytes> b{};
  std::memcpy(b.data(), kTokenFileMagic, 8);
  put<uint32_t>(b.data() + 8, h.version);
  put<uint32_t>(b.data() + 12, h.token_width);
  put<uint32_t>(b.data() + 16, h.vocab_size);
  put<int64_t>(b.data() + 24, h.tokens);
  put<int64_t>(b.data() + 32, h.split);
  put<int64_t>(b.data() + 40, h.train_bytes);
  put<int64_t>(b.data() + 48, h.val_bytes);
  put<uint64_t>(b.data() + 56, h.tokenizer_fnv1a64);
  put<uint32_t>(b.data() + kChecksumOffset, token_file_header_checksum(b.data()));
  return b;
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
    fail("token file {} has format version 1 (no header checksum), this rfa reads version {}; token files are "
         "derived from the corpus, so re-run `rfa data prepare` to rebuild it", path, kTokenFileVersion);
  if (h.version != kTokenFileVersion)
    fail("token file {} has format version {}, this rfa reads version {}: it is corrupt or from another rfa; re-run "
         "`rfa data prepare` to rebuild it", path, h.version, kTokenFileVersion);
  const uint32_t stored = get<uint32_t>(b + kChecksumOffset), actual = token_file_header_checksum(b);
  if (stored != actual)
    fail("token file {} is corrupt: its header checksum is {:08x} but its header bytes give {:08x}; re-run `rfa data "
         "prepare` to rebuild it", path, stored, actual);
  if (h.vocab_size == 0 || h.token_width != token_file_width(h.vocab_size))
    fail("token file {} is corrupt: token width {} bytes for vocab {}; re-run `rfa data prepare`", path,
         h.token_width, h.vocab_size);
  if (h.tokens < 0 || static_cast<uint64_t>(h.tokens) > (file_size - kTokenFileHeaderBytes) / h.token_width ||
      kTokenFileHeaderBytes + static_cast<uint64_t>(h.tokens) * h.token_width != file_size)
    fail("token file {} is truncated or corrupt: {} bytes, but its header promises {} tokens of {} bytes ({} bytes); "
         "re-run `rfa data prepare`", path, file_size, h.tokens, h.token_width,
         kTokenFileHeaderBytes + static_cast<uint64_t>(h.tokens) * h.token_width);
  if (h.split < 0 || h.split > h.tokens || h.train_bytes < 0 || h.val_bytes < 0)
    fail("token file {} is corrupt: split {} of {} tokens, {} + {} bytes; re-run `rfa data prepare`", path, h.split,
         h.tokens, h.train_bytes, h.val_bytes);
  return h;
}

}  // namespace rfa
