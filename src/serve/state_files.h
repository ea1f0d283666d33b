#pragma once
// Named state files in one directory (--state-dir): a cache entry (the tokens a state
// consumed, the state, its last logits) and optionally the chat messages it came from,
// as DIR/NAME.state (safetensors: tensors "tokens" I32, "state" F32, "logits" F32;
// metadata naming the model's weights checksum and the state layout). A name is 1-64 of
// [A-Za-z0-9._-], not starting with '.', so nothing outside the directory is ever read or
// written; a file there that is a symbolic link is refused. Writes are atomic
// (a temporary name, then rename).
#include <memory>
#include <string>
#include <vector>

#include "serve/chat_template.h"
#include "serve/state_cache.h"

namespace rfa {

struct StateFile {
  std::shared_ptr<const CacheEntry> entry;
  std::vector<ChatMessage> messages;  // empty when saved without
};

class StateFiles {
 public:
  // Throws Error when `dir` is not a directory.
  StateFiles(std::string dir, std::string model_checksum, std::string layout, int vocab);

  // "" when the name is allowed, else why not (the rule).
  static std::string name_problem(const std::string& name);
  // Throw Error naming the file and what is wrong (name, missing, another model or layout, corrupt).
  void save(const std::string& name, const StateFile& file) const;
  StateFile load(const std::string& name) const;
  std::string path(const std::string& name) const;  // DIR/NAME.state (name checked)
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, checksum_, layout_;
  int vocab_ = 0;
};

}  // namespace rfa
