#include "train/train_init.h"

#include <array>
#include <vector>

#include <fmt/ranges.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_tokenizer.h"
#include "config/config_keys.h"
#include "config/config_load.h"
#include "core/error.h"
#include "core/log.h"
#include "io/file_io.h"
#include "io/hash.h"
#include "model/model_io.h"
#include "model/model_load.h"
#include "train/train_resume.h"
#include "train/train_session.h"

namespace rfa {
namespace {

constexpr std::array<std::string_view, 2> kChangeable = {"model.context_length", "attention.chunk_size"};

// The sections a fine-tune takes from its parent.
bool inherited(std::string_view key) {
  return key.starts_with("model.") || key.starts_with("attention.") || key.starts_with("tokenizer.");
}

// The parent's tokenizer keys as it used them: "" resolved against its own corpus (config_paths.cpp),
// which in the child's config would name a tokenizer of the child's corpus instead.
Config tokenizer_resolved(Config parent) {
  const std::string path = config_tokenizer_path(parent), corpus = config_tokenizer_corpus(parent);
  parent.tokenizer.path = path;
  parent.tokenizer.corpus = corpus;
  return parent;
}

// A value that says "derive it" (model.vocab_size 0: from the tokenizer; tokenizer.path and
// tokenizer.corpus "": from the corpus). A fine-tune's tokenizer is its parent's, so such a value
// follows the parent whether it was given or left out.
bool derives(std::string_view key, const std::string& value) {
  if (key == "model.vocab_size") return value == "0";
  return (key == "tokenizer.path" || key == "tokenizer.corpus") && value.empty();
}

InitPoint prepare_from(const std::string& dir, const Config& child, const ConfigOrigins& given) {
  const std::string config_path = dir + "/config.yaml", state_path = dir + "/state.json";
  const Config parent = tokenizer_resolved(
      checkpoint_file_read(dir, [&] { return config_parse(file_read_text(config_path), config_path); }));
  const TrainState state =
      checkpoint_file_read(dir, [&] { return train_state_parse(file_read_text(state_path), state_path); });
  Config merged = child;
  std::vector<std::string> taken;  // keys the child left out, taken from the parent
  for (const ConfigKey& key : config_keys()) {
    if (!inherited(key.path)) continue;
    const std::string mine = config_key_get(key, child), theirs = config_key_get(key, parent);
    if (mine == theirs) continue;
    const auto origin = given.find(key.path);
    if (origin == given.end() || derives(key.path, mine)) {
      config_key_set(key, theirs, merged);
      taken.push_back(fmt::format("{}={}", key.path, theirs));
    } else if (!init_key_changeable(key.path)) {
      fail("{}: --init-from {}: {} is '{}' in the new config but '{}' in the parent checkpoint {}; a fine-tune keeps "
           "the parent's architecture and tokenizer: drop {} from the config (the parent's value is then used) or "
           "set it to '{}'. Only {} may differ from the parent",
           origin->second, child.train.init_from, key.path, mine, theirs, dir, key.path, theirs,
           fmt::join(kChangeable, " and "));
    }
  }
  config_validate(merged);
  if (checkpoint_in_run(dir, merged.train.run_dir))
    fail("--init-from {}: train.run_dir '{}' is the parent's own run; a fine-tune is a new run: pick another "
         "directory with --set train.run_dir=...",
         child.train.init_from, merged.train.run_dir);
  if (!taken.empty())
    log_info("init", "from the parent's config (the new config leaves them out): {}",
             fmt::join(taken, ", "));
  InitPoint point;
  point.checkpoint_dir = dir;
  point.tokenizer_path = checkpoint_tokenizer_path(dir, state, parent.tokenizer.path);
  point.config = merged;
  point.step = state.step;
  point.model_xxh64 = file_xxh64(dir + "/model.safetensors");
  return point;
}

}  // namespace

bool init_key_changeable(std::string_view key) {
  for (std::string_view k : kChangeable)
    if (k == key) return true;
  return false;
}

InitPoint init_from_prepare(const Config& child, const ConfigOrigins& given) {
  RFA_ASSERT(!child.train.init_from.empty(), "init_from_prepare without train.init_from");
  // A parent still training may prune the checkpoint its `latest` named while we read it.
  return checkpoint_read_retrying(child.train.init_from,
                                  [&](const std::string& dir) { return prepare_from(dir, child, given); });
}

void init_from_load(TrainSession& session, const InitPoint& point) {
  Model<float>& model = session.model();
  const LoadedCheckpoint ck = checkpoint_load(point.checkpoint_dir, model_tensor_specs(model.spec), {});
  if (ck.state.step != point.step)
    fail("--init-from {}: the checkpoint changed while it was read (step {}, then {}); start the fine-tune again",
         point.checkpoint_dir, point.step, ck.state.step);
  model_tensors_load(model, ck);
  model.bf16_refresh();
  log_info("init", "weights and fixed random matrices of {} (step {}, model.safetensors {}); step 0, zero AdamW "
           "moments, this run's schedule",
           point.checkpoint_dir, point.step, point.model_xxh64);
}

}  // namespace rfa
