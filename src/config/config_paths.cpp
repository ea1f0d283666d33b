// The file paths a config derives when they are left "" (declared in config.h).
#include <fmt/format.h>

#include <filesystem>

#include "config/config.h"
#include "config/config_enums.h"

namespace rfa {

std::string config_tokenizer_path(const Config& c) {
  if (!c.tokenizer.path.empty()) return c.tokenizer.path;
  const std::filesystem::path corpus(config_tokenizer_corpus(c));
  const std::string name =
      fmt::format("{}-{}{}.model", corpus.stem().string(), enum_name(c.tokenizer.kind), c.tokenizer.vocab_size);
  return (corpus.parent_path() / name).string();
}

}  // namespace rfa
