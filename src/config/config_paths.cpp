// The file paths a config derives when they are left "" (declared in config.h).
#include <fmt/format.h>

#include <filesystem>

#include "config/config.h"
#include "config/config_enums.h"

namespace rfa {
namespace {

// "data/books/" -> "data/books": a directory's derived files go beside it, never inside, where
// they would join the corpus (data/corpus_source.h reads every file under it).
std::string without_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

std::vector<std::string> config_corpus_paths(const std::string& corpus) {
  std::vector<std::string> paths;
  for (size_t at = 0;;) {
    const size_t comma = corpus.find(',', at);
    paths.push_back(corpus.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) return paths;
    at = comma + 1;
  }
}

std::string config_tokens_path(const DataConfig& d) {
  return d.tokens.empty() ? without_trailing_slash(d.corpus) + ".tokens" : d.tokens;
}

std::string config_tokenizer_path(const Config& c) {
  if (!c.tokenizer.path.empty()) return c.tokenizer.path;
  const std::vector<std::string> paths = config_corpus_paths(config_tokenizer_corpus(c));
  const std::filesystem::path first(without_trailing_slash(paths.front()));
  const std::string others = paths.size() > 1 ? fmt::format("+{}", paths.size() - 1) : "";
  const std::string name = fmt::format("{}{}-{}{}.model", first.stem().string(), others, enum_name(c.tokenizer.kind),
                                       c.tokenizer.vocab_size);
  return (first.parent_path() / name).string();
}

}  // namespace rfa
