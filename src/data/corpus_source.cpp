#include "data/corpus_source.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "data/prompt_template.h"
#include "data/token_file_writer.h"
#include "io/json.h"
#include "tokenizer/text_check.h"

namespace rfa {
namespace {

namespace fs = std::filesystem;

bool hidden(const fs::path& p) { return p.filename().string().starts_with('.'); }

// The files under `dir`, not hidden and not inside a hidden directory, in path order.
std::vector<std::string> directory_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (hidden(it->path())) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) files.push_back(it->path().string());
  }
  if (ec) fail("cannot list corpus directory '{}': {}", dir, ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

// The string field `name` of object `v`, or `fallback` when absent and optional.
std::string field(const JsonValue& v, const char* name, bool required, const std::string& where, const char* layout) {
  const JsonValue* f = v.find(name);
  if (!f) {
    if (!required) return "";
    fail("{}: no \"{}\" field; this data.format expects one JSON object per line, {}", where, name, layout);
  }
  if (f->kind != JsonValue::Kind::string)
    fail("{}: \"{}\" is not a string; this data.format expects one JSON object per line, {}", where, name, layout);
  if (f->text.find('\0') != std::string::npos)
    fail("{}: \"{}\" holds a NUL character (\\u0000), which is not text; remove it", where, name);
  return f->text;
}

}  // namespace

std::vector<std::string> corpus_files(const std::string& corpus) {
  std::vector<std::string> files;
  const std::vector<std::string> paths = config_corpus_paths(corpus);
  const bool list = paths.size() > 1;
  for (const std::string& path : paths) {
    const std::string in = list ? fmt::format(" (in data.corpus '{}')", corpus) : "";
    if (path.empty()) fail("data.corpus '{}' has an empty path; separate paths with single commas", corpus);
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> under = directory_files(path);
      if (under.empty())
        fail("corpus directory '{}'{} holds no files (hidden ones are skipped); put the corpus files in it", path, in);
      files.insert(files.end(), under.begin(), under.end());
    } else if (fs::is_regular_file(path, ec)) {
      files.push_back(path);
    } else if (fs::exists(path, ec)) {
      fail("corpus '{}'{} is not a file or a directory; point data.corpus at UTF-8 text", path, in);
    } else {
      fail("corpus '{}'{} does not exist; fetch it with scripts/get-data.sh or point data.corpus at a UTF-8 text "
           "file, a directory of them, or several separated by commas", path, in);
    }
  }
  return files;
}

CorpusSource corpus_source(const std::string& corpus, DataFormat format, PromptTemplate prompt_template) {
  if (format == DataFormat::mqar)
    fail("data.format mqar has no corpus to read ({}): its token file is written by `rfa data mqar` (docs/recall.md)",
         corpus);
  CorpusSource s;
  s.files = corpus_files(corpus);
  s.format = format;
  s.prompt_template = prompt_template;
  s.spec = corpus;
  return s;
}

DocumentText document_parse(std::string_view line, DataFormat format, PromptTemplate prompt_template,
                            const std::string& where) {
  const JsonValue v = json_parse(line, where);
  DocumentText d;
  switch (format) {
    case DataFormat::jsonl: {
      constexpr const char* layout = "{\"text\": \"...\"} (data.format jsonl)";
      if (v.kind != JsonValue::Kind::object) fail("{}: not a JSON object; expected {}", where, layout);
      d.response = field(v, "text", true, where, layout);
      break;
    }
    case DataFormat::alpaca: {
      constexpr const char* layout =
          "{\"instruction\": \"...\", \"input\": \"...\" (may be absent or empty), \"output\": \"...\"} "
          "(data.format alpaca)";
      if (v.kind != JsonValue::Kind::object) fail("{}: not a JSON object; expected {}", where, layout);
      d.prompt = prompt_render(prompt_template, field(v, "instruction", true, where, layout),
                               field(v, "input", false, where, layout));
      d.response = field(v, "output", true, where, layout);
      break;
    }
    case DataFormat::prompt_completion: {
      constexpr const char* layout = "{\"prompt\": \"...\", \"completion\": \"...\"} (data.format prompt_completion)";
      if (v.kind != JsonValue::Kind::object) fail("{}: not a JSON object; expected {}", where, layout);
      d.prompt = field(v, "prompt", true, where, layout);
      d.response = field(v, "completion", true, where, layout);
      break;
    }
    case DataFormat::preference: {
      constexpr const char* layout =
          "{\"prompt\": \"...\", \"chosen\": \"...\", \"rejected\": \"...\"} (data.format preference)";
      if (v.kind != JsonValue::Kind::object) fail("{}: not a JSON object; expected {}", where, layout);
      d.prompt = field(v, "prompt", true, where, layout);
      d.response = field(v, "chosen", true, where, layout);
      d.rejected = field(v, "rejected", true, where, layout);
      break;
    }
    default: RFA_ASSERT(false, "document_parse of the text format");
  }
  return d;
}

JsonLinesReader::JsonLinesReader(const CorpusSource& source, size_t block_bytes)
    : source_(source), block_bytes_(block_bytes) {}

JsonLinesReader::~JsonLinesReader() {
  if (file_) std::fclose(file_);
  std::free(buffer_);
}

bool JsonLinesReader::open_next_file() {
  if (file_) std::fclose(file_);
  file_ = nullptr;
  if (file_index_ == source_.files.size()) return false;
  path_ = source_.files[file_index_++];
  file_ = std::fopen(path_.c_str(), "rb");
  if (!file_) fail("cannot open corpus {}: {}", path_, std::strerror(errno));
  line_number_ = offset_ = 0;
  return true;
}

bool JsonLinesReader::next(std::vector<SourceLine>& lines) {
  lines.clear();
  size_t bytes = 0;
  while (bytes < block_bytes_) {
    if (!file_ && !open_next_file()) break;
    errno = 0;
    const ssize_t got = ::getline(&buffer_, &capacity_, file_);
    if (got < 0) {
      if (std::ferror(file_)) fail("cannot read corpus {}: {}", path_, std::strerror(errno));
      std::fclose(file_);
      file_ = nullptr;
      continue;
    }
    const std::string_view text(buffer_, static_cast<size_t>(got));
    text_check(text, path_, "corpus", offset_);  // names the byte offset of a NUL or malformed UTF-8
    offset_ += got;
    ++line_number_;
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;  // a blank line
    lines.push_back({std::string(text), fmt::format("{}:{}", path_, line_number_)});
    bytes += static_cast<size_t>(got);
  }
  return !lines.empty();
}

void corpus_text_write(const CorpusSource& source, const std::string& path) {
  File out(std::fopen(path.c_str(), "wb"));
  if (!out) fail("cannot create {}: {}", path, std::strerror(errno));
  auto put = [&](std::string_view s) {
    if (std::fwrite(s.data(), 1, s.size(), out.get()) != s.size())
      fail("cannot write {}: {} (disk full?)", path, std::strerror(errno));
  };
  if (source.format == DataFormat::text) {
    std::vector<char> buf(1 << 20);
    for (const std::string& file : source.files) {
      File in(std::fopen(file.c_str(), "rb"));
      if (!in) fail("cannot open corpus {}: {}", file, std::strerror(errno));
      for (size_t got; (got = std::fread(buf.data(), 1, buf.size(), in.get())) > 0;) put({buf.data(), got});
      if (std::ferror(in.get())) fail("cannot read corpus {}: {}", file, std::strerror(errno));
      put("\n");  // the next file's first line is a line of its own
    }
  } else {
    JsonLinesReader reader(source, 1 << 20);
    std::vector<SourceLine> lines;
    while (reader.next(lines))
      for (const SourceLine& line : lines) {
        const DocumentText d = document_parse(line.text, source.format, source.prompt_template, line.where);
        put(d.prompt);
        put(d.response);
        put("\n");
        if (source.format == DataFormat::preference) {
          put(d.prompt);
          put(d.rejected);
          put("\n");
        }
      }
  }
  if (std::fclose(out.release()) != 0) fail("cannot close {}: {} (disk full?)", path, std::strerror(errno));
}

}  // namespace rfa
