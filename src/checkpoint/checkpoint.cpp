#include "checkpoint/checkpoint.h"

#include <filesystem>

#include "checkpoint/checkpoint_dir.h"
#include "io/file_io.h"
#include "io/hash.h"
#include "core/error.h"
#include "core/log.h"

namespace rfa {
namespace {

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kStateFile = "state.json";
constexpr const char* kConfigFile = "config.yaml";
constexpr const char* kTokenizerFile = "tokenizer.model";

}  // namespace

std::string checkpoint_save(const std::string& root, const CheckpointContents& c, const CheckpointConfig& retention) {
  std::string dir = checkpoint_dir_commit(root, checkpoint_name(c.state.step), [&](const std::string& temp) {
    safetensors_write(temp + "/" + kModelFile, c.model, {{"rfa.content", "model"}});
    safetensors_write(temp + "/" + kOptimizerFile, c.optimizer, {{"rfa.content", "optimizer"}});
    file_write_durable(temp + "/" + kStateFile, train_state_serialize(c.state));
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

LoadedCheckpoint checkpoint_load(const std::string& dir, const std::vector<TensorSpec>& model_expected,
                                 const std::vector<TensorSpec>& optimizer_expected) {
  LoadedCheckpoint out;
  out.dir = dir;
  const std::string state_path = dir + "/" + kStateFile;
  out.state = train_state_parse(file_read_text(state_path), state_path);
  const std::string model_path = dir + "/" + kModelFile;
  out.model = safetensors_read(model_path);
  safetensors_validate(out.model, model_expected, model_path);
  if (!optimizer_expected.empty()) {
    const std::string optimizer_path = dir + "/" + kOptimizerFile;
    out.optimizer = safetensors_read(optimizer_path);
    safetensors_validate(out.optimizer, optimizer_expected, optimizer_path);
  }
  out.config_yaml = file_read_text(dir + "/" + kConfigFile);
  const std::string tokenizer = dir + "/" + kTokenizerFile;
  std::error_code ec;
  if (std::filesystem::exists(tokenizer, ec)) {
    out.tokenizer_path = tokenizer;
    if (!out.state.tokenizer_xxh64.empty()) {
      std::string actual = tokenizer_xxh64(tokenizer);
      if (actual != out.state.tokenizer_xxh64) {
        fail("{}: checksum {} differs from {} recorded in {}: the tokenizer copy is corrupted", tokenizer, actual,
             out.state.tokenizer_xxh64, state_path);
      }
    }
  }
  return out;
}

}  // namespace rfa
