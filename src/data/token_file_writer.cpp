#include "data/token_file_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "data/token_file_format.h"
#include "io/file_util.h"
#include "tokenizer/text_check.h"
#include "tokenizer/utf8.h"

namespace rfa {

size_t block_cut(std::string_view buf) {
  size_t nl = buf.find_last_of('\n');
  if (nl != std::string_view::npos) return nl + 1;
  size_t space = buf.find_last_of(' ');
  if (space != std::string_view::npos && space > 0) return space;
  size_t cut = buf.size() - 1;  // before the last character, which may be incomplete
  while (cut > 0 && !utf8_is_lead(static_cast<unsigned char>(buf[cut]))) --cut;
  return cut > 0 ? cut : buf.size();  // no lead byte at all: invalid, reported by the caller
}

namespace {

// Blocks smaller than this are encoded on the calling thread (the tail of a
// corpus, tests with tiny blocks): a parallel region costs ~ms on a busy machine.
constexpr size_t kParallelMinBytes = 128 << 10;

}  // namespace

// No gemm here, so parallel_for is safe.
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

void encode_text(const Tokenizer& tok, std::string_view text, const std::string& where, std::vector<int32_t>& out) {
  constexpr size_t kPieceBytes = 64 << 10;  // as a block's pieces: SentencePiece is quicker on short texts
  for (size_t start = 0; start < text.size();) {
    size_t len = text.size() - start;
    if (len > kPieceBytes) len = block_cut(text.substr(start, kPieceBytes));
    const std::string_view piece = text.substr(start, len);
    const size_t before = out.size();
    tok.encode_append(piece, out);
    int64_t decoded = 0;
    for (size_t i = before; i < out.size(); ++i) decoded += tok.token_bytes(out[i]);
    if (decoded != static_cast<int64_t>(piece.size()))
      fail("tokenizer {} does not round-trip {} ({} bytes became {}); re-train the tokenizer with `rfa tokenizer "
           "train`", tok.origin(), where, piece.size(), decoded);
    start += len;
  }
}

TokenFileWriter::TokenFileWriter(const std::string& out_path, const Tokenizer& tok, uint32_t version)
    : out_path_(out_path) {
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(out_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  for (const std::string& stale : file_temp_remove_stale(out_path))
    log_info("data", "removed {}, left behind by an encoding that was killed", stale);
  temp_ = file_temp_path(out_path);
  file_.reset(std::fopen(temp_.c_str(), "w+b"));
  if (!file_) fail("cannot create {}: {}", temp_, std::strerror(errno));
  header_.version = version;
  header_.vocab_size = static_cast<uint32_t>(tok.vocab_size());
  header_.token_width = token_file_width(tok.vocab_size());
  header_.tokenizer_fnv1a64 = tok.fnv1a64();
  const auto provisional = token_file_header_bytes(header_);  // rewritten with the counts by commit()
  if (std::fwrite(provisional.data(), 1, provisional.size(), file_.get()) != provisional.size())
    fail("cannot write {}: {}", temp_, std::strerror(errno));
}

TokenFileWriter::~TokenFileWriter() {
  if (committed_) return;
  file_.reset();
  std::error_code ec;
  std::filesystem::remove(temp_, ec);  // an error: leave nothing behind under the temporary name
}

void TokenFileWriter::write(const std::vector<int32_t>& ids) {
  const uint32_t width = header_.token_width;
  std::vector<unsigned char>& scratch = scratch_;
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
  if (std::fwrite(scratch.data(), 1, scratch.size(), file_.get()) != scratch.size())
    fail("cannot write {} bytes to {}: {} (disk full?)", scratch.size(), temp_, std::strerror(errno));
  header_.tokens += static_cast<int64_t>(ids.size());
}

int64_t TokenFileWriter::bytes_of(int64_t begin, int64_t end, const Tokenizer& tok) {
  const uint32_t width = header_.token_width;
  std::FILE* f = file_.get();
  if (std::fseek(f, token_file_header_size(header_.version) + begin * width, SEEK_SET) != 0)
    fail("cannot seek in {}: {}", temp_, std::strerror(errno));
  std::vector<unsigned char> buf(1 << 16);
  int64_t bytes = 0;
  for (int64_t i = begin; i < end;) {
    size_t n = static_cast<size_t>(std::min<int64_t>(end - i, static_cast<int64_t>(buf.size() / width)));
    if (std::fread(buf.data(), width, n, f) != n) fail("cannot read back {}: {}", temp_, std::strerror(errno));
    TokenSplit chunk(buf.data(), static_cast<int>(width), static_cast<int64_t>(n), 0);
    for (size_t j = 0; j < n; ++j) bytes += tok.token_bytes(chunk[static_cast<int64_t>(j)]);
    i += static_cast<int64_t>(n);
  }
  return bytes;
}

void TokenFileWriter::append_raw(const void* data, size_t bytes) {
  if (bytes == 0) return;  // an empty part (data may be null: fwrite's pointer must not be)
  if (std::fseek(file_.get(), 0, SEEK_END) != 0 || std::fwrite(data, 1, bytes, file_.get()) != bytes)
    fail("cannot write {} bytes to {}: {} (disk full?)", bytes, temp_, std::strerror(errno));
}

void TokenFileWriter::commit() {
  const auto header = token_file_header_bytes(header_);
  if (std::fseek(file_.get(), 0, SEEK_SET) != 0 ||
      std::fwrite(header.data(), 1, header.size(), file_.get()) != header.size() || std::fflush(file_.get()) != 0)
    fail("cannot write the header of {}: {}", temp_, std::strerror(errno));
  if (std::fclose(file_.release()) != 0) fail("cannot close {}: {} (disk full?)", temp_, std::strerror(errno));
  file_commit(temp_, out_path_);
  committed_ = true;
}

int64_t corpus_file_size(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    fail("corpus {} does not exist (or is not a file); run `scripts/get-data.sh kjv` or set data.corpus", path);
  const int64_t size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (size == 0) fail("corpus {} is empty; set data.corpus to a text file", path);
  return size;
}

int64_t text_file_encode(const std::string& path, const Tokenizer& tok, TokenFileWriter& writer, size_t block_bytes) {
  RFA_ASSERT(block_bytes >= 16, "block of {} bytes", block_bytes);
  const int64_t size = corpus_file_size(path);
  File in(std::fopen(path.c_str(), "rb"));
  if (!in) fail("cannot open corpus {}: {}", path, std::strerror(errno));
  std::string buf;  // carry-over + new block; capacity ~ 2 * block_bytes
  buf.reserve(2 * block_bytes);
  // Blocks are encoded in pieces of 1/16 of a block, in parallel: SentencePiece
  // is ~2x faster on 64 KiB than on 1 MiB and its transient memory scales with the piece.
  const size_t piece_bytes = std::max<size_t>(16, block_bytes / 16);
  std::vector<std::string_view> pieces;
  std::vector<std::vector<int32_t>> ids;
  int64_t offset = 0;  // corpus byte offset of buf[0]
  bool eof = false;
  while (!eof || !buf.empty()) {
    if (!eof) {
      size_t old = buf.size();
      buf.resize(old + block_bytes);
      size_t got = std::fread(buf.data() + old, 1, block_bytes, in.get());
      buf.resize(old + got);
      if (got < block_bytes) {
        if (std::ferror(in.get())) fail("cannot read corpus {}: {}", path, std::strerror(errno));
        eof = true;
      }
    }
    size_t cut = eof ? buf.size() : block_cut(buf);
    std::string_view block(buf.data(), cut);
    text_check(block, path, "corpus", offset);
    encode_pieces(tok, block, piece_bytes, pieces, ids);
    int64_t piece_offset = offset;
    for (size_t k = 0; k < pieces.size(); ++k) {
      int64_t decoded = 0;
      for (int32_t id : ids[k]) decoded += tok.token_bytes(id);
      if (decoded != static_cast<int64_t>(pieces[k].size()))
        fail("tokenizer {} does not round-trip corpus {} near byte offset {} ({} bytes became {}); re-train the "
             "tokenizer with `rfa tokenizer train`", tok.origin(), path, piece_offset, pieces[k].size(), decoded);
      writer.write(ids[k]);
      piece_offset += static_cast<int64_t>(pieces[k].size());
    }
    offset += static_cast<int64_t>(cut);
    buf.erase(0, cut);
  }
  RFA_ASSERT(offset == size, "read {} of {} corpus bytes", offset, size);
  return size;
}

}  // namespace rfa
