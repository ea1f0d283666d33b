#include "serve/state_files.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <span>

#include "checkpoint/safetensors.h"
#include "core/error.h"
#include "io/file_util.h"

namespace rfa {

StateFiles::StateFiles(std::string dir, std::string checksum, std::string layout, int vocab)
    : dir_(std::move(dir)), checksum_(std::move(checksum)), layout_(std::move(layout)), vocab_(vocab) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir_, ec))
    fail("--state-dir '{}' is not a directory; create it first (mkdir -p {})", dir_, dir_);
}

std::string StateFiles::name_problem(const std::string& name) {
  const std::string rule = "a state name is 1 to 64 letters, digits, '.', '_' or '-', not starting with '.'";
  if (name.empty() || name.size() > 64 || name[0] == '.') return rule;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return rule;
  return "";
}

std::string StateFiles::path(const std::string& name) const {
  if (const std::string problem = name_problem(name); !problem.empty())
    fail("state name '{}' is not allowed: {}", name, problem);
  return dir_ + "/" + name + ".state";
}

void StateFiles::save(const std::string& name, const StateFile& file) const {
  const std::string p = path(name);
  const CacheEntry& e = *file.entry;
  nlohmann::json messages = nlohmann::json::array();
  for (const ChatMessage& m : file.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  std::vector<TensorRef> refs = {
      {"tokens", DType::I32, {static_cast<int64_t>(e.tokens.size())}, e.tokens.data()},
      {"state", DType::F32, {static_cast<int64_t>(e.state.state.size())}, e.state.state.data()},
      {"logits", DType::F32, {static_cast<int64_t>(e.state.logits.size())}, e.state.logits.data()}};
  const std::string temp = file_temp_path(p);
  try {
    safetensors_write(temp, refs,
                      {{"rfa.content", "serve-state"},
                       {"model_checksum", checksum_},
                       {"layout", layout_},
                       {"messages", messages.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)}});
  } catch (const Error& e2) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    fail("saving state '{}' to {}: {}", name, p, e2.what());
  }
  file_commit(temp, p);
}

StateFile StateFiles::load(const std::string& name) const {
  const std::string p = path(name);
  std::error_code ec;
  if (std::filesystem::is_symlink(p, ec)) fail("state '{}': {} is a symbolic link; refused", name, p);
  if (!std::filesystem::is_regular_file(p, ec)) fail("state '{}' does not exist ({})", name, p);
  SafetensorsFile f = safetensors_read(p);
  auto meta = [&](const char* key) {
    auto it = f.metadata.find(key);
    if (it == f.metadata.end()) fail("{} is not a state file of rfa serve (no '{}' in its metadata)", p, key);
    return it->second;
  };
  if (meta("rfa.content") != "serve-state") fail("{} is not a state file of rfa serve", p);
  if (meta("model_checksum") != checksum_)
    fail("state '{}' was saved from another model (weights checksum {}, this model {})", name,
         meta("model_checksum"), checksum_);
  if (meta("layout") != layout_)
    fail("state '{}' has the layout '{}', this server '{}'", name, meta("layout"), layout_);
  const Tensor* tokens = f.find("tokens");
  const Tensor* state = f.find("state");
  const Tensor* logits = f.find("logits");
  if (!tokens || !state || !logits || tokens->dtype != DType::I32 || tokens->shape.size() != 1 ||
      state->dtype != DType::F32 || state->shape.size() != 1 || logits->dtype != DType::F32 ||
      logits->shape != std::vector<int64_t>{vocab_})
    fail("{}: expected tensors tokens (I32, 1-d), state (F32, 1-d) and logits (F32, [{}]); the file is corrupt", p,
         vocab_);
  auto entry = std::make_shared<CacheEntry>();
  entry->tokens.resize(static_cast<size_t>(tokens->shape[0]));
  std::memcpy(entry->tokens.data(), tokens->bytes.data(), tokens->bytes.size());
  for (int32_t t : entry->tokens)
    if (t < 0 || t >= vocab_) fail("{}: token {} is outside the vocabulary [0, {}); the file is corrupt", p, t, vocab_);
  entry->state.position = static_cast<int64_t>(entry->tokens.size());
  entry->state.state.resize(static_cast<size_t>(state->shape[0]));
  tensor_copy_to(*state, entry->state.state.data(), state->shape[0]);
  entry->state.logits.resize(static_cast<size_t>(vocab_));
  tensor_copy_to(*logits, entry->state.logits.data(), vocab_);
  for (std::span<const float> v : {std::span<const float>(entry->state.state), std::span<const float>(entry->state.logits)})
    for (float x : v)
      if (!std::isfinite(x)) fail("{}: holds {}; a saved state is finite, so the file is corrupt", p, x);
  StateFile out;
  out.entry = std::move(entry);
  try {
    for (const nlohmann::json& m : nlohmann::json::parse(meta("messages")))
      out.messages.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
  } catch (const nlohmann::json::exception& e) {
    fail("{}: its chat messages do not read ({}); the file is corrupt", p, e.what());
  }
  return out;
}

}  // namespace rfa
