// token_file_prepare: stream a corpus through the tokenizer into a token file.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "io/file_util.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "data/token_file.h"
#include "data/token_file_format.h"
#include "tokenizer/text_check.h"
#include "tokenizer/utf8.h"

namespace rfa {
namespace {

// A block ends at its last newline (or space, or character boundary when a line
// is longer than a block), so it never splits a piece the tokenizer would have
// formed: pieces never contain '\n' (it is a byte token) and never continue
// across a space.
size_t block_cut(std::string_view buf) {
  size_t nl = buf.find_last_of('\n');
  if (nl != std::string_view::npos) return nl + 1;
  size_t space = buf.find_last_of(' ');
  if (space != std::string_view::npos && space > 0) return space;
  size_t cut = buf.size() - 1;  // before the last character, which may be incomplete
  while (cut > 0 && !utf8_is_lead(static_cast<unsigned char>(buf[cut]))) --cut;
  return cut > 0 ? cut : buf.size();  // no lead byte at all: invalid, reported by the caller
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Writes ids at the file's width; `scratch` is reused across blocks.
void write_tokens(std::FILE* out, const std::vector<int32_t>& ids, uint32_t width, std::vector<unsigned char>& scratch,
                  const std::string& path) {
  scratch.resize(ids.size() * width);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (width == 2) {
      uint16_t v = static_cast<uint16_t>(ids[i]);
      std::memcpy(scratch.data() + i * 2, &v, 2);
    } else {
      uint32_t v = static_cast<uint32_t>(ids[i]);
      std::memcpy(scratch.data() + i * 4, &v, 4);
    }
  }
  if (std::fwrite(scratch.data(), 1, scratch.size(), out) != scratch.size())
    fail("cannot write {} bytes to {}: {} (disk full?)", scratch.size(), path, std::strerror(errno));
}

// Blocks smaller than this are encoded on the calling thread (the tail of a
// corpus, tests with tiny blocks): a parallel region costs ~ms on a busy machine.
constexpr size_t kParallelMinBytes = 128 << 10;

// Cuts `block` into pieces of at most piece_bytes (where block_cut would) and
// encodes them on all threads into ids[k]; no gemm here, so parallel_for is safe.
void encode_pieces(const Tokenizer& tok, std::string_view block, size_t piece_bytes,
                   std::vector<std::string_view>& pieces, std::vector<std::vector<int32_t>>& ids) {
  pieces.clear();
  for (size_t start = 0; start < block.size();) {
    size_t len = block.size() - start;
    if (len > piece_bytes) len = block_cut(block.substr(start, piece_bytes));
    pieces.push_back(block.substr(start, len));
    start += len;
  }
  if (ids.size() < pieces.size()) ids.resize(pieces.size());
  if (block.size() < kParallelMinBytes) {  // a thread team costs more than it saves here
    for (size_t k = 0; k < pieces.size(); ++k) {
      ids[k].clear();
      tok.encode_append(pieces[k], ids[k]);
    }
    return;
  }
  std::vector<std::string> errors(pieces.size());  // exceptions must not leave an OpenMP region
  parallel_for(static_cast<int64_t>(pieces.size()), [&](int64_t k) {
    ids[k].clear();
    try {
      tok.encode_append(pieces[k], ids[k]);
    } catch (const std::exception& e) {
      errors[k] = e.what();
    }
  });
  for (const std::string& e : errors)
    if (!e.empty()) throw Error(e);
}

// Corpus bytes the tokens [begin, end) of the file being written decode to.
int64_t bytes_of_tokens(std::FILE* f, int64_t begin, int64_t end, uint32_t width, const Tokenizer& tok,
                        const std::string& path) {
  if (std::fseek(f, kTokenFileHeaderBytes + begin * width, SEEK_SET) != 0)
    fail("cannot seek in {}: {}", path, std::strerror(errno));
  std::vector<unsigned char> buf(1 << 16);
  int64_t bytes = 0;
  for (int64_t i = begin; i < end;) {
    size_t n = static_cast<size_t>(std::min<int64_t>(end - i, static_cast<int64_t>(buf.size() / width)));
    if (std::fread(buf.data(), width, n, f) != n) fail("cannot read back {}: {}", path, std::strerror(errno));
    TokenSplit chunk(buf.data(), static_cast<int>(width), static_cast<int64_t>(n), 0);
    for (size_t j = 0; j < n; ++j) bytes += tok.token_bytes(chunk[static_cast<int64_t>(j)]);
    i += static_cast<int64_t>(n);
  }
  return bytes;
}

}  // namespace

TokenFileStats token_file_prepare(const std::string& corpus_path, const Tokenizer& tok, const std::string& out_path,
                                  double val_fraction) {
  return token_file_prepare_blocks(corpus_path, tok, out_path, val_fraction, kTokenFileBlockBytes);
}

TokenFileStats token_file_prepare_blocks(const std::string& corpus_path, const Tokenizer& tok,
                                         const std::string& out_path, double val_fraction, size_t block_bytes) {
  RFA_ASSERT(block_bytes >= 16, "block of {} bytes", block_bytes);
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))
    fail("data val_fraction {} must be in [0, 1) (0.1 keeps the last 10% of tokens for validation)", val_fraction);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(corpus_path, ec))
    fail("corpus {} does not exist (or is not a file); run `scripts/get-data.sh kjv` or set data.corpus",
         corpus_path);
  int64_t corpus_size = static_cast<int64_t>(std::filesystem::file_size(corpus_path, ec));
  if (corpus_size == 0) fail("corpus {} is empty; set data.corpus to a text file", corpus_path);
  File in(std::fopen(corpus_path.c_str(), "rb"));
  if (!in) fail("cannot open corpus {}: {}", corpus_path, std::strerror(errno));

  std::filesystem::path parent = std::filesystem::path(out_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  for (const std::string& stale : file_temp_remove_stale(out_path))
    log_info("data", "removed {}, left behind by an encoding that was killed", stale);
  std::string temp = file_temp_path(out_path);
  File out(std::fopen(temp.c_str(), "w+b"));
  if (!out) fail("cannot create {}: {}", temp, std::strerror(errno));
  struct RemoveTemp {  // on any error, leave nothing behind under the temporary name
    const std::string& path;
    bool armed = true;
    ~RemoveTemp() {
      std::error_code e;
      if (armed) std::filesystem::remove(path, e);
    }
  } remove_temp{temp};

  Timer timer;
  TokenFileHeader h;
  h.vocab_size = static_cast<uint32_t>(tok.vocab_size());
  h.token_width = token_file_width(tok.vocab_size());
  h.tokenizer_fnv1a64 = tok.fnv1a64();
  auto provisional_header = token_file_header_bytes(h);  // rewritten with the counts at the end
  if (std::fwrite(provisional_header.data(), 1, provisional_header.size(), out.get()) != provisional_header.size())
    fail("cannot write {}: {}", temp, std::strerror(errno));

  std::string buf;  // carry-over + new block; capacity ~ 2 * block_bytes
  buf.reserve(2 * block_bytes);
  // Blocks are encoded in pieces of 1/16 of a block, in parallel: SentencePiece
  // is ~2x faster on 64 KiB than on 1 MiB and its transient memory scales with the piece.
  const size_t piece_bytes = std::max<size_t>(16, block_bytes / 16);
  std::vector<std::string_view> pieces;
  std::vector<std::vector<int32_t>> ids;
  std::vector<unsigned char> scratch;
  int64_t offset = 0;  // corpus byte offset of buf[0]
  bool eof = false;
  while (!eof || !buf.empty()) {
    if (!eof) {
      size_t old = buf.size();
      buf.resize(old + block_bytes);
      size_t got = std::fread(buf.data() + old, 1, block_bytes, in.get());
      buf.resize(old + got);
      if (got < block_bytes) {
        if (std::ferror(in.get())) fail("cannot read corpus {}: {}", corpus_path, std::strerror(errno));
        eof = true;
      }
    }
    size_t cut = eof ? buf.size() : block_cut(buf);
    std::string_view block(buf.data(), cut);
    text_check(block, corpus_path, "corpus", offset);
    encode_pieces(tok, block, piece_bytes, pieces, ids);
    int64_t piece_offset = offset;
    for (size_t k = 0; k < pieces.size(); ++k) {
      int64_t decoded = 0;
      for (int32_t id : ids[k]) decoded += tok.token_bytes(id);
      if (decoded != static_cast<int64_t>(pieces[k].size()))
        fail("tokenizer {} does not round-trip corpus {} near byte offset {} ({} bytes became {}); re-train the "
             "tokenizer with `rfa tokenizer train`", tok.origin(), corpus_path, piece_offset, pieces[k].size(),
             decoded);
      write_tokens(out.get(), ids[k], h.token_width, scratch, temp);
      h.tokens += static_cast<int64_t>(ids[k].size());
      piece_offset += static_cast<int64_t>(pieces[k].size());
    }
    offset += static_cast<int64_t>(cut);
    buf.erase(0, cut);
  }
  RFA_ASSERT(offset == corpus_size, "read {} of {} corpus bytes", offset, corpus_size);

  int64_t val_tokens = static_cast<int64_t>(static_cast<double>(h.tokens) * val_fraction);
  h.split = h.tokens - val_tokens;
  h.val_bytes = bytes_of_tokens(out.get(), h.split, h.tokens, h.token_width, tok, temp);
  h.train_bytes = corpus_size - h.val_bytes;
  auto header = token_file_header_bytes(h);
  if (std::fseek(out.get(), 0, SEEK_SET) != 0 ||
      std::fwrite(header.data(), 1, header.size(), out.get()) != header.size() || std::fflush(out.get()) != 0)
    fail("cannot write the header of {}: {}", temp, std::strerror(errno));
  if (std::fclose(out.release()) != 0) fail("cannot close {}: {} (disk full?)", temp, std::strerror(errno));
  file_commit(temp, out_path);
  remove_temp.armed = false;

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
