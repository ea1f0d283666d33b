#include "checkpoint/checkpoint.h"

#include <filesystem>

#include <fmt/ranges.h>

#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/checkpoint_tokenizer.h"
#include "io/file_io.h"
#include "io/hash.h"
#include "core/checksum_policy.h"
#include "core/error.h"
#include "core/log.h"

namespace rfa {
namespace {

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kStreamsFile = "stream.safetensors";
constexpr const char* kStateFile = "state.json";
constexpr const char* kConfigFile = "config.yaml";
constexpr const char* kTokenizerFile = "tokenizer.model";
// Metadata of both safetensors files (from format version 2): the optimizer step they hold.
constexpr const char* kStepKey = "rfa.step";

// state.json's step must agree with the directory name and with the step both tensor
// files were written at (their metadata is under the table checksum, so it cannot drift
// alone): an edited step would resume at the wrong point of the schedule and overwrite
// another checkpoint.
void check_step(const std::string& dir, const std::string& state_path, const TrainState& state,
                const std::map<std::string, std::string>& metadata, const std::string& file_path) {
  const std::string fix = fmt::format(
      "restore the original {}, or resume from another checkpoint with `rfa train --resume RUN/checkpoints/step-N`",
      state_path);
  std::filesystem::path name = std::filesystem::path(dir).lexically_normal();
  if (!name.has_filename()) name = name.parent_path();  // "step-000012/"
  const int64_t named = checkpoint_name_step(name.filename().string());
  if (named >= 0 && named != state.step)
    fail("{}: step {} does not match its checkpoint directory {} (step {}); {}", state_path, state.step,
         name.filename().string(), named, fix);
  auto it = metadata.find(kStepKey);
  if (it == metadata.end()) {
    if (state.format_version >= 2)
      fail("{}: no \"{}\" metadata, which format version {} requires; the checkpoint is damaged: resume from "
           "another checkpoint",
           file_path, kStepKey, state.format_version);
    return;
  }
  if (it->second != std::to_string(state.step))
    fail("{}: step {} does not match the step {} that {} was written at; {}", state_path, state.step, it->second,
         file_path, fix);
}

}  // namespace

std::string checkpoint_save(const std::string& root, const CheckpointContents& c, const CheckpointConfig& retention) {
  const std::string step = std::to_string(c.state.step);
  std::string dir = checkpoint_dir_commit(root, checkpoint_name(c.state.step), [&](const std::string& temp) {
    safetensors_write(temp + "/" + kModelFile, c.model, {{"rfa.content", "model"}, {kStepKey, step}});
    safetensors_write(temp + "/" + kOptimizerFile, c.optimizer, {{"rfa.content", "optimizer"}, {kStepKey, step}});
    if (!c.streams.empty())
      safetensors_write(temp + "/" + kStreamsFile, c.streams, {{"rfa.content", "streams"}, {kStepKey, step}});
    TrainState state = c.state;
    state.config_xxh64 = hash_hex(xxhash64(c.config_yaml.data(), c.config_yaml.size()));
    file_write_durable(temp + "/" + kStateFile, train_state_serialize(state));
    file_write_durable(temp + "/" + kConfigFile, c.config_yaml);
    if (!c.tokenizer_path.empty()) file_copy_durable(c.tokenizer_path, temp + "/" + kTokenizerFile);
  });
  // The new checkpoint is safely in place; a failure to prune old ones only costs disk.
  try {
    std::vector<std::string> removed = checkpoint_prune(root, retention.keep_last, retention.keep_best);
    if (!removed.empty()) log_info("checkpoint", "removed old checkpoints: {}", fmt::join(removed, ", "));
  } catch (const Error& e) {
    log_warn("checkpoint", "could not prune old checkpoints in {}: {}", root, e.what());
  }
  return dir;
}

std::string checkpoint_damaged_fix(const std::string& dir) {
  std::filesystem::path self = std::filesystem::path(dir).lexically_normal();
  if (!self.has_filename()) self = self.parent_path();  // "step-000012/"
  const std::string root = self.parent_path().empty() ? "." : self.parent_path().string();
  std::vector<std::string> others;  // newest first
  try {
    std::vector<CheckpointEntry> all = checkpoint_list(root);
    for (auto it = all.rbegin(); it != all.rend() && others.size() < 3; ++it)
      if (it->name != self.filename().string()) others.push_back(root + "/" + it->name);
  } catch (const Error&) {
  }
  if (others.empty())
    return fmt::format("checkpoint {} is damaged and has no other checkpoint beside it: restore the file from a copy",
                       dir);
  return fmt::format("checkpoint {} is damaged: restore the file, or use another checkpoint by naming its directory "
                     "(newest first: {})",
                     dir, fmt::join(others, ", "));
}

LoadedCheckpoint checkpoint_load(const std::string& dir, const std::vector<TensorSpec>& model_expected,
                                 const std::vector<TensorSpec>& optimizer_expected,
                                 const std::vector<TensorSpec>& streams_expected) {
  LoadedCheckpoint out;
  out.dir = dir;
  const std::string state_path = dir + "/" + kStateFile;
  out.state = checkpoint_file_read(dir, [&] { return train_state_parse(file_read_text(state_path), state_path); });
  const std::string model_path = dir + "/" + kModelFile;
  out.model = checkpoint_file_read(dir, [&] { return SafetensorsReader(model_path); });
  safetensors_validate(out.model, model_expected, model_path);
  check_step(dir, state_path, out.state, out.model.metadata, model_path);
  if (!optimizer_expected.empty()) {
    const std::string optimizer_path = dir + "/" + kOptimizerFile;
    out.optimizer = checkpoint_file_read(dir, [&] { return SafetensorsReader(optimizer_path); });
    safetensors_validate(out.optimizer, optimizer_expected, optimizer_path);
    check_step(dir, state_path, out.state, out.optimizer.metadata, optimizer_path);
  }
  if (!streams_expected.empty()) {
    const std::string streams_path = dir + "/" + kStreamsFile;
    if (!std::filesystem::exists(streams_path))
      fail("checkpoint {} has no {}: it holds no stream offsets and carried states, which a train.stateful run "
           "resumes from; resume from a checkpoint of a stateful run",
           dir, kStreamsFile);
    out.streams = checkpoint_file_read(dir, [&] { return safetensors_read(streams_path); });
    safetensors_validate(out.streams, streams_expected, streams_path);
    check_step(dir, state_path, out.state, out.streams.metadata, streams_path);
  }
  out.config_yaml = checkpoint_file_read(dir, [&] { return file_read_text(dir + "/" + kConfigFile); });
  // The config a resume trains with (and inference builds the model from): an edited value there
  // (optim.lr, train.batch_size) changed the run without a word.
  if (const std::string sum = hash_hex(xxhash64(out.config_yaml.data(), out.config_yaml.size()));
      checksums_enforced() && !out.state.config_xxh64.empty() && sum != out.state.config_xxh64)
    fail("{}/{}: checksum {} differs from the {} that state.json records: the saved config was edited or "
         "corrupted (a resume trains with it as saved; --set changes the keys it allows); {}",
         dir, kConfigFile, sum, out.state.config_xxh64, checkpoint_damaged_fix(dir));
  const std::string tokenizer = dir + "/" + kTokenizerFile;
  std::error_code ec;
  if (std::filesystem::exists(tokenizer, ec)) {
    out.tokenizer_path = tokenizer;
    checkpoint_tokenizer_verify(dir, out.state, "");
  }
  return out;
}

}  // namespace rfa
