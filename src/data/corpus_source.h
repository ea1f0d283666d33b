#pragma once
// What data.corpus and data.format name: the corpus files, and the documents in them.
//   data.corpus  a file, a directory (every regular file under it whose name does not start
//                with '.', in path order, subdirectories included), or several of either
//                separated by commas, in the order given.
//   data.format  text: each file is one text (a single file is the version 2 token file of
//                before; several are joined by EOS). The JSON Lines formats hold one document
//                per line (blank lines skipped), an object with string fields (others ignored):
//                  jsonl              {"text": T}                                   -> T
//                  alpaca             {"instruction": I, "input": X (optional), "output": O}
//                                     -> prompt prompt_render(template, I, X), response O
//                  prompt_completion  {"prompt": P, "completion": C} -> prompt P, response C
//                  preference         {"prompt": P, "chosen": A, "rejected": B} -> two documents, the
//                                     chosen answer's then the rejected one's, each with prompt P
//                and each document becomes encode(prompt) ++ encode(response) ++ [EOS]: the parts
//                encoded separately, so the prompt/response boundary never moves.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace rfa {

struct CorpusSource {
  std::vector<std::string> files;  // in order
  DataFormat format = DataFormat::text;
  PromptTemplate prompt_template = PromptTemplate::alpaca;
  std::string spec;                // data.corpus as given, for messages
};

// Lists the files of `corpus` (data.corpus syntax above). Throws Error naming a path that
// does not exist or a directory without files, and the fix.
std::vector<std::string> corpus_files(const std::string& corpus);
CorpusSource corpus_source(const std::string& corpus, DataFormat format, PromptTemplate prompt_template);
inline CorpusSource corpus_source(const DataConfig& d) { return corpus_source(d.corpus, d.format, d.prompt_template); }

// True when the corpus is one text file: the version 2 token file, as before documents.
inline bool corpus_is_one_text(const CorpusSource& s) { return s.format == DataFormat::text && s.files.size() == 1; }

// One document of a JSON Lines corpus: the prompt (empty for jsonl) and the response.
struct DocumentText {
  std::string prompt;
  std::string response;  // preference: the chosen answer
  std::string rejected;  // preference: the rejected answer
};

// Parses one line of a JSON Lines corpus of `format` (not text). Throws Error naming `where`
// ("file:line"), the missing or ill-typed field and the format's expected layout.
DocumentText document_parse(std::string_view line, DataFormat format, PromptTemplate prompt_template,
                            const std::string& where);

// One line of a JSON Lines file and where it came from.
struct SourceLine {
  std::string text;
  std::string where;  // "file:line"
};

// Reads the non-blank lines of the corpus files in order, in blocks of about `block_bytes`,
// so memory stays bounded by the block (and the longest line) whatever the corpus size.
class JsonLinesReader {
 public:
  JsonLinesReader(const CorpusSource& source, size_t block_bytes);
  ~JsonLinesReader();
  JsonLinesReader(const JsonLinesReader&) = delete;
  JsonLinesReader& operator=(const JsonLinesReader&) = delete;

  // Fills `lines` with the next lines (at least one while any remain); false at the end.
  bool next(std::vector<SourceLine>& lines);

 private:
  bool open_next_file();  // false when no file is left
  const CorpusSource& source_;
  size_t block_bytes_;
  size_t file_index_ = 0;     // the next file to open
  std::FILE* file_ = nullptr;
  std::string path_;          // of file_
  int64_t line_number_ = 0;   // lines of file_ read so far
  int64_t offset_ = 0;        // bytes of file_ read so far
  char* buffer_ = nullptr;    // getline's
  size_t capacity_ = 0;
};

// The text a tokenizer trained for this corpus should see, written to `path` (streamed): the
// text files, or each document's prompt and response followed by a newline.
void corpus_text_write(const CorpusSource& source, const std::string& path);

}  // namespace rfa
