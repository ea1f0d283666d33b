#include "data/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "data/token_file_format.h"

namespace rfa {

static_assert(std::endian::native == std::endian::little, "token files are little-endian");

int32_t TokenSplit::operator[](int64_t i) const {
  if (width_ == 2) {
    uint16_t v;
    std::memcpy(&v, data_ + i * 2, 2);
    return v;
  }
  uint32_t v;
  std::memcpy(&v, data_ + i * 4, 4);
  return static_cast<int32_t>(v);
}

void TokenSplit::copy(int64_t begin, int64_t count, int32_t* out) const {
  RFA_ASSERT(begin >= 0 && count >= 0 && begin + count <= size_, "tokens [{}, {}) outside split of {}", begin,
             begin + count, size_);
  if (width_ == 2) {
    const unsigned char* p = data_ + begin * 2;
    for (int64_t j = 0; j < count; ++j) {
      uint16_t v;
      std::memcpy(&v, p + j * 2, 2);
      out[j] = v;
    }
  } else {
    std::memcpy(out, data_ + begin * 4, static_cast<size_t>(count) * 4);
  }
}

std::vector<int32_t> TokenSplit::to_vector() const {
  std::vector<int32_t> v(static_cast<size_t>(size_));
  copy(0, size_, v.data());
  return v;
}

namespace {

int64_t entry(const unsigned char* entries, int64_t d, int field) {
  int64_t v;
  std::memcpy(&v, entries + (d * 2 + field) * 8, 8);
  return v;
}

}  // namespace

int64_t DocumentTable::start(int64_t d) const { return entry(entries_, d, 0); }
int64_t DocumentTable::response_start(int64_t d) const { return entry(entries_, d, 1); }

int64_t DocumentTable::find(int64_t pos) const {
  int64_t lo = 0, hi = size_;  // the first d with end(d) > pos
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (end(mid) > pos) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

TokenFile::TokenFile(TokenFile&& o) noexcept
    : path_(std::move(o.path_)), header_(o.header_), map_(o.map_), map_size_(o.map_size_) {
  o.map_ = nullptr;
  o.map_size_ = 0;
}

TokenFile& TokenFile::operator=(TokenFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, map_size_);
    path_ = std::move(o.path_);
    header_ = o.header_;
    map_ = o.map_;
    map_size_ = o.map_size_;
    o.map_ = nullptr;
    o.map_size_ = 0;
  }
  return *this;
}

TokenFile::~TokenFile() {
  if (map_) ::munmap(map_, map_size_);
}

TokenFile TokenFile::open_unchecked(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer would wait forever; the S_ISREG check refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    fail("cannot open token file {}: {}; create it with `rfa data prepare`", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail("cannot stat token file {}: {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {  // a directory failed mmap with "No such device"
    ::close(fd);
    fail("token file {} is {}, not a file; point data.tokens at the file `rfa data prepare` writes", path,
         S_ISDIR(st.st_mode) ? "a directory" : "a pipe, device or socket");
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size < static_cast<size_t>(kTokenFileHeaderBytes)) {
    ::close(fd);
    token_file_check(nullptr, size, path);  // throws: too short for the header
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (map == MAP_FAILED) fail("cannot mmap token file {} ({} bytes): {}", path, size, std::strerror(err));

  TokenFile file;
  file.path_ = path;
  file.map_ = map;
  file.map_size_ = size;
  file.header_ = token_file_check(static_cast<const unsigned char*>(map), size, path);
  return file;
}

TokenFileHeader token_file_check(const unsigned char* bytes, size_t size, const std::string& path) {
  if (size < static_cast<size_t>(kTokenFileHeaderBytes))
    fail("token file {} is truncated: {} bytes, shorter than its {}-byte header; re-run `rfa data prepare`", path,
         size, kTokenFileHeaderBytes);
  const TokenFileHeader h = token_file_header_parse(bytes, size, path);
  // Every id must index the embedding table; a 30M-token scan takes ~20 ms.
  TokenSplit all(bytes + token_file_header_size(h.version), h.token_width, h.tokens, 0);
  for (int64_t i = 0; i < h.tokens; ++i) {
    int32_t id = all[i];
    if (id < 0 || static_cast<uint32_t>(id) >= h.vocab_size)
      fail("token file {} is corrupt: token {} has id {} outside vocab [0, {}); re-run `rfa data prepare`", path, i,
           id, h.vocab_size);
  }
  if (h.version == kTokenFileDocumentsVersion)
    token_file_documents_check(all, DocumentTable(bytes + token_file_table_offset(h), h.documents, h.tokens), h,
                               path);
  return h;
}

TokenFile TokenFile::open(const std::string& path, const Tokenizer& expected) {
  TokenFile file = open_unchecked(path);
  const TokenFileHeader& h = file.header_;
  if (static_cast<int64_t>(h.vocab_size) != expected.vocab_size())
    fail("token file {} was made with a tokenizer of vocab {}, but tokenizer {} has vocab {}; re-run `rfa data "
         "prepare` with this tokenizer", path, h.vocab_size, expected.origin(), expected.vocab_size());
  if (h.tokenizer_fnv1a64 != expected.fnv1a64())
    fail("token file {} was made with another tokenizer (checksum {:016x}) than {} (checksum {:016x}); re-run `rfa "
         "data prepare` with this tokenizer", path, h.tokenizer_fnv1a64, expected.origin(), expected.fnv1a64());
  return file;
}

TokenSplit TokenFile::train() const {
  const auto* tokens = static_cast<const unsigned char*>(map_) + token_file_header_size(header_.version);
  return TokenSplit(tokens, header_.token_width, header_.split, header_.train_bytes);
}

TokenSplit TokenFile::val() const {
  const auto* tokens = static_cast<const unsigned char*>(map_) + token_file_header_size(header_.version);
  return TokenSplit(tokens + header_.split * header_.token_width, header_.token_width,
                    header_.tokens - header_.split, header_.val_bytes);
}

TokenSplit TokenFile::all() const {
  const auto* tokens = static_cast<const unsigned char*>(map_) + token_file_header_size(header_.version);
  return TokenSplit(tokens, header_.token_width, header_.tokens, header_.train_bytes + header_.val_bytes);
}

DocumentTable TokenFile::documents() const {
  if (header_.version != kTokenFileDocumentsVersion) return {};
  return DocumentTable(static_cast<const unsigned char*>(map_) + token_file_table_offset(header_), header_.documents,
                       header_.tokens, header_.format == DataFormat::mqar);
}

}  // namespace rfa
