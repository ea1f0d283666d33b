#include "tokenizer/text_check.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace rfa {
namespace {

[[noreturn]] void fail_fault(const TextFault& f, int64_t base, const std::string& path, std::string_view what) {
  const int64_t offset = base + f.offset;
  if (f.nul)
    fail("{} {} is not text: NUL byte at byte offset {} (a binary file, or UTF-16 text; convert UTF-16 with "
         "`iconv -f utf-16 -t utf-8`, or give a UTF-8 text file)", what, path, offset);
  fail("{} {} is not UTF-8 text: invalid UTF-8 at byte offset {} (byte 0x{:02x}); give a UTF-8 text file "
       "(convert Latin-1 text with `iconv -f latin1 -t utf-8`)", what, path, offset, f.byte);
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

std::optional<TextFault> text_fault(std::string_view text) {
  const size_t valid = utf8_valid_prefix(text);
  const size_t nul = text.substr(0, valid).find('\0');
  if (nul != std::string_view::npos) return TextFault{static_cast<int64_t>(nul), 0, true};
  if (valid != text.size())
    return TextFault{static_cast<int64_t>(valid), static_cast<unsigned char>(text[valid]), false};
  return std::nullopt;
}

void text_check(std::string_view text, const std::string& path, std::string_view what, int64_t offset) {
  if (std::optional<TextFault> f = text_fault(text)) fail_fault(*f, offset, path, what);
}

void text_file_check(const std::string& path, std::string_view what) {
  // A directory reads as an error late, a FIFO blocks forever in fopen: refuse both by their type first.
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!ec && !std::filesystem::is_regular_file(st))
    fail("{} {} is {}, not a text file; point it at a text file", what, path,
         std::filesystem::is_directory(st) ? "a directory" : "a pipe, device or socket");
  std::unique_ptr<std::FILE, FileCloser> in(std::fopen(path.c_str(), "rb"));
  if (!in) fail("cannot open {} {}: {}", what, path, std::strerror(errno));
  constexpr size_t kBlock = 1 << 20;
  std::string buf;       // carried-over tail of the previous block + the new block
  int64_t base = 0;      // file offset of buf[0]
  int64_t total = 0;
  for (bool eof = false; !eof;) {
    const size_t old = buf.size();
    buf.resize(old + kBlock);
    const size_t got = std::fread(buf.data() + old, 1, kBlock, in.get());
    buf.resize(old + got);
    total += static_cast<int64_t>(got);
    if (got < kBlock) {
      if (std::ferror(in.get())) fail("cannot read {} {}: {}", what, path, std::strerror(errno));
      eof = true;
    }
    std::optional<TextFault> f = text_fault(buf);
    // A fault in the last 3 bytes of a block may be a character cut by the block end: read on.
    const bool maybe_cut = f && !f->nul && !eof && f->offset + 4 > static_cast<int64_t>(buf.size());
    if (f && !maybe_cut) fail_fault(*f, base, path, what);
    const size_t keep = f ? buf.size() - static_cast<size_t>(f->offset) : 0;
    base += static_cast<int64_t>(buf.size() - keep);
    buf.erase(0, buf.size() - keep);
  }
  if (total == 0) fail("{} {} is empty; give a UTF-8 text file", what, path);
}

}  // namespace rfa
