#include "data/token_file_documents.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "config/config_enums.h"
#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "data/token_file_format.h"
#include "data/token_file_writer.h"

namespace rfa {
namespace {

// The document table as it grows: (start, response start) pairs in a temporary file.
class TableFile {
 public:
  explicit TableFile(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "w+b")) {
    if (!file_) fail("cannot create {}: {}", path, std::strerror(errno));
  }
  ~TableFile() {
    file_.reset();
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  void add(int64_t start, int64_t response_start) {
    const int64_t entry[2] = {start, response_start};
    if (std::fwrite(entry, 8, 2, file_.get()) != 2)
      fail("cannot write {}: {} (disk full?)", path_, std::strerror(errno));
    ++size_;
  }
  int64_t size() const { return size_; }
  int64_t start(int64_t d) {  // reads back entry d
    int64_t entry[2];
    if (std::fseek(file_.get(), d * 16, SEEK_SET) != 0 || std::fread(entry, 8, 2, file_.get()) != 2)
      fail("cannot read back {}: {}", path_, std::strerror(errno));
    return entry[0];
  }
  // Documents whose start is below `split`; the starts increase.
  int64_t count_before(int64_t split) {
    int64_t lo = 0, hi = size_;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (start(mid) < split) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  void copy_to(TokenFileWriter& writer) {
    if (std::fflush(file_.get()) != 0 || std::fseek(file_.get(), 0, SEEK_SET) != 0)
      fail("cannot read back {}: {}", path_, std::strerror(errno));
    std::vector<char> buf(1 << 16);
    for (size_t got; (got = std::fread(buf.data(), 1, buf.size(), file_.get())) > 0;) writer.append_raw(buf.data(), got);
    if (std::ferror(file_.get())) fail("cannot read back {}: {}", path_, std::strerror(errno));
  }

 private:
  std::string path_;
  File file_;
  int64_t size_ = 0;
};

// A block of JSON Lines documents, parsed and encoded: ids[k] = prompt ++ response ++ [EOS]
// (preference: rejected[k] = prompt ++ rejected answer ++ [EOS] follows it).
struct EncodedBlock {
  std::vector<std::vector<int32_t>> ids;
  std::vector<std::vector<int32_t>> rejected;
  std::vector<int64_t> prompt_tokens;
  std::vector<int64_t> text_bytes;
  std::vector<std::string> errors;  // exceptions must not leave an OpenMP region
};

constexpr size_t kParallelMinBytes = 128 << 10;  // as token_file_writer.cpp: smaller blocks stay serial

void encode_block(const std::vector<SourceLine>& lines, const CorpusSource& source, const Tokenizer& tok,
                  EncodedBlock& out) {
  const size_t n = lines.size();
  if (out.ids.size() < n) out.ids.resize(n);
  if (out.rejected.size() < n) out.rejected.resize(n);
  out.prompt_tokens.assign(n, 0);
  out.text_bytes.assign(n, 0);
  out.errors.assign(n, "");
  size_t bytes = 0;
  for (const SourceLine& l : lines) bytes += l.text.size();
  auto one = [&](int64_t k) {
    const SourceLine& line = lines[static_cast<size_t>(k)];
    std::vector<int32_t>& ids = out.ids[static_cast<size_t>(k)];
    ids.clear();
    try {
      const DocumentText d = document_parse(line.text, source.format, source.prompt_template, line.where);
      encode_text(tok, d.prompt, line.where + " (its prompt)", ids);
      out.prompt_tokens[static_cast<size_t>(k)] = static_cast<int64_t>(ids.size());
      if (source.format == DataFormat::preference) {  // the prompt's ids once, for both answers
        std::vector<int32_t>& other = out.rejected[static_cast<size_t>(k)];
        other.assign(ids.begin(), ids.end());
        encode_text(tok, d.rejected, line.where + " (its rejected answer)", other);
        other.push_back(tok.eos_id());
      }
      encode_text(tok, d.response, line.where, ids);
      ids.push_back(tok.eos_id());
      out.text_bytes[static_cast<size_t>(k)] = static_cast<int64_t>(d.prompt.size() + d.response.size());
      if (source.format == DataFormat::preference)
        out.text_bytes[static_cast<size_t>(k)] += static_cast<int64_t>(d.prompt.size() + d.rejected.size());
    } catch (const std::exception& e) {
      out.errors[static_cast<size_t>(k)] = e.what();
    }
  };
  if (bytes < kParallelMinBytes) {
    for (size_t k = 0; k < n; ++k) one(static_cast<int64_t>(k));
  } else {
    parallel_for(static_cast<int64_t>(n), one);  // no gemm here, so parallel_for is safe
  }
  for (const std::string& e : out.errors)  // the first bad line in file order
    if (!e.empty()) throw Error(e);
}

}  // namespace

TokenFileStats token_file_prepare_documents(const CorpusSource& source, const Tokenizer& tok,
                                            const std::string& out_path, double val_fraction, size_t block_bytes) {
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))
    fail("data val_fraction {} must be in [0, 1) (0.1 keeps the last 10% for validation)", val_fraction);
  const int32_t eos = tok.eos_id();
  if (eos < 0)
    fail("tokenizer {} has no end-of-sequence token (</s>), which ends every document of a {} corpus; use a "
         "tokenizer trained by `rfa tokenizer train`",
         tok.origin(), enum_name(source.format));
  const bool text = source.format == DataFormat::text;
  if (text)
    for (const std::string& f : source.files) corpus_file_size(f);  // refuses a missing or empty file up front
  Timer timer;
  TokenFileWriter writer(out_path, tok, kTokenFileDocumentsVersion);
  TableFile table(writer.temp_path() + ".documents");
  TokenFileHeader& h = writer.header();
  int64_t text_bytes = 0;
  if (text) {
    for (size_t i = 0; i < source.files.size(); ++i) {
      table.add(h.tokens, h.tokens);
      text_bytes += text_file_encode(source.files[i], tok, writer, block_bytes);
      if (i + 1 < source.files.size()) writer.write({eos});  // files are joined by EOS
    }
  } else {
    JsonLinesReader reader(source, block_bytes);
    std::vector<SourceLine> lines;
    EncodedBlock block;
    while (reader.next(lines)) {
      encode_block(lines, source, tok, block);
      for (size_t k = 0; k < lines.size(); ++k) {
        const int64_t start = h.tokens;
        table.add(start, source.format == DataFormat::jsonl ? start : start + block.prompt_tokens[k]);
        writer.write(block.ids[k]);
        if (source.format == DataFormat::preference) {  // the pair's second document
          table.add(h.tokens, h.tokens + block.prompt_tokens[k]);
          writer.write(block.rejected[k]);
        }
        text_bytes += block.text_bytes[k];
      }
    }
  }
  const int64_t D = table.size(), N = h.tokens;
  if (D == 0)
    fail("corpus '{}' holds no documents (only blank lines); data.format {} expects one JSON object per line",
         source.spec, enum_name(source.format));
  int64_t val_documents = 0;
  if (text) {
    h.split = N - static_cast<int64_t>(static_cast<double>(N) * val_fraction);
    h.split_document = table.count_before(h.split);
  } else {
    const int64_t per = source.format == DataFormat::preference ? 2 : 1;  // documents per line: split whole pairs
    if (val_fraction > 0) {
      if (D < 2 * per)
        fail("corpus '{}' holds {} document{}; a validation split of whole documents needs at least 2", source.spec,
             D / per, per == 2 ? " pair" : "");
      val_documents = per * std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(D / per) * val_fraction));
    }
    h.split_document = D - val_documents;
    h.split = h.split_document < D ? table.start(h.split_document) : N;
  }
  h.val_bytes = writer.bytes_of(h.split, N, tok);
  h.train_bytes = writer.bytes_of(0, h.split, tok);
  h.documents = D;
  h.format = source.format;
  h.prompt_template = source.format == DataFormat::alpaca ? 1 + static_cast<uint32_t>(source.prompt_template) : 0;
  h.eos_id = eos;
  const int64_t end = token_file_header_size(h.version) + N * int64_t(h.token_width);
  const std::vector<char> pad(static_cast<size_t>(token_file_table_offset(h) - end), 0);
  writer.append_raw(pad.data(), pad.size());
  table.copy_to(writer);
  writer.commit();

  TokenFileStats s;
  s.corpus_bytes = text_bytes;
  s.tokens = N;
  s.train_tokens = h.split;
  s.val_tokens = N - h.split;
  s.train_bytes = h.train_bytes;
  s.val_bytes = h.val_bytes;
  s.documents = D;
  s.val_documents = text ? D - h.split_document : val_documents;
  s.seconds = timer.seconds();
  log_info("data", "{} ({} file(s), {}): {} documents, {} bytes of text -> {} tokens, train {} / val {} tokens{}, "
           "in {:.2f}s -> {}",
           source.spec, source.files.size(), enum_name(source.format), D, text_bytes, N, s.train_tokens,
           s.val_tokens, text ? std::string() : fmt::format(" (the last {} documents)", val_documents), s.seconds,
           out_path);
  return s;
}

}  // namespace rfa
