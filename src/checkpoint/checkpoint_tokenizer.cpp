#include "checkpoint/checkpoint_tokenizer.h"

#include <algorithm>
#include <filesystem>

#include "io/hash.h"
#include "core/error.h"

namespace rfa {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTokenizerFile = "tokenizer.model";

// tokenizer_xxh64, or "" when the file cannot be read (a copy that is itself unreadable).
std::string checksum_or_empty(const std::string& path) {
  try {
    return tokenizer_xxh64(path);
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

std::vector<std::string> tokenizer_intact_copies(const std::string& dir, const std::string& expected,
                                                 const std::string& tokenizer_path) {
  std::vector<std::string> found;
  fs::path self = fs::path(dir).lexically_normal();
  if (self.filename().empty()) self = self.parent_path();  // "step-000100/"
  if (self.parent_path().empty()) self = fs::absolute(self);  // "step-000100": its root is needed by name
  const fs::path root = self.parent_path();
  std::vector<fs::path> siblings;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    if (p.filename() == self.filename() || p.filename().string().rfind("step-", 0) != 0) continue;
    if (p.filename().string().find(".tmp") != std::string::npos) continue;  // a write in progress
    if (fs::is_regular_file(p / kTokenizerFile, ec)) siblings.push_back(p / kTokenizerFile);
  }
  std::sort(siblings.rbegin(), siblings.rend());  // newest checkpoint first
  // RUN/checkpoints/step-N: the run keeps the copy the checkpoints were made from in RUN/.
  if (root.filename() == "checkpoints" && fs::is_regular_file(root.parent_path() / kTokenizerFile, ec))
    siblings.insert(siblings.begin(), root.parent_path() / kTokenizerFile);
  for (const fs::path& p : siblings)
    if (checksum_or_empty(p.string()) == expected) found.push_back(p.string());
  if (!tokenizer_path.empty() && fs::is_regular_file(tokenizer_path, ec) &&
      checksum_or_empty(tokenizer_path) == expected)
    found.push_back(tokenizer_path);
  return found;
}

std::string tokenizer_restore_advice(const std::string& dir, const std::string& expected,
                                     const std::string& tokenizer_path) {
  const std::string target = (fs::path(dir) / kTokenizerFile).string();
  std::vector<std::string> copies = tokenizer_intact_copies(dir, expected, tokenizer_path);
  if (!copies.empty())
    return fmt::format("restore it from an intact copy (checksum {}): `cp {} {}`", expected, copies.front(), target);
  std::string searched = tokenizer_path.empty() ? std::string()
                                                : fmt::format(" nor the config's tokenizer.path {}", tokenizer_path);
  return fmt::format("no intact copy was found (not in the other checkpoints next to {}{}); copy the tokenizer the "
                     "run was trained with (checksum {}) to {}. Do not re-train it: a new tokenizer does not fit the "
                     "model", dir, searched, expected, target);
}

void checkpoint_tokenizer_verify(const std::string& dir, const TrainState& state, const std::string& tokenizer_path) {
  const std::string copy = (fs::path(dir) / kTokenizerFile).string();
  std::error_code ec;
  if (state.tokenizer_xxh64.empty() || !fs::exists(copy, ec)) return;
  const std::string actual = tokenizer_xxh64(copy);
  if (actual == state.tokenizer_xxh64) return;
  fail("checkpoint {}: its tokenizer copy {} is corrupt (checksum {}, but state.json records {} for the tokenizer "
       "the model was trained with); {}",
       dir, copy, actual, state.tokenizer_xxh64, tokenizer_restore_advice(dir, state.tokenizer_xxh64,
                                                                             tokenizer_path));
}

std::string checkpoint_tokenizer_path(const std::string& dir, const TrainState& state,
                                      const std::string& path) {
  const std::string copy = dir + "/" + kTokenizerFile;
  checkpoint_tokenizer_verify(dir, state, path);
  if (fs::exists(copy)) return copy;
  if (state.tokenizer_xxh64.empty() || !fs::exists(path))
    fail("checkpoint {} has no tokenizer.model and the tokenizer it was trained with cannot be identified "
         "(tokenizer.path '{}'); copy the training tokenizer to {}/tokenizer.model",
         dir, path, dir);
  if (std::string actual = tokenizer_xxh64(path); actual != state.tokenizer_xxh64)
    fail("checkpoint {} has no tokenizer.model and '{}' has checksum {}, not the {} recorded in training; {}", dir,
         path, actual, state.tokenizer_xxh64, tokenizer_restore_advice(dir, state.tokenizer_xxh64, ""));
  return path;
}

}  // namespace rfa
