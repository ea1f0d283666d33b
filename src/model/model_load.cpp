#include "model/model_load.h"

#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/checkpoint_tokenizer.h"
#include "io/file_io.h"
#include "io/hash.h"
#include "config/config_enums.h"
#include "config/config_load.h"
#include "kernels/bf16.h"
#include "core/error.h"
#include "core/log.h"
#include "core/memory_check.h"
#include "model/memory_estimate.h"
#include "model/model_io.h"
#include "model/model_spec.h"

namespace rfa {
namespace {

namespace fs = std::filesystem;

bool is_checkpoint(const fs::path& p) { return fs::exists(p / "model.safetensors"); }

// The tokenizer the model was trained with: never guessed. The checkpoint's own
// copy (checkpoint_load checks it against state.json), else the config's path
// if it is byte-identical to the one recorded in state.json.
std::unique_ptr<Tokenizer> tokenizer_of(const std::string& dir, const TrainState& state, const Config& config) {
  const std::string copy = dir + "/tokenizer.model";
  const std::string path = config_tokenizer_path(config);
  checkpoint_tokenizer_verify(dir, state, path);  // before parsing: a corrupt copy may not parse at all
  if (fs::exists(copy)) return std::make_unique<Tokenizer>(Tokenizer::load(copy));
  if (state.tokenizer_xxh64.empty())
    fail("checkpoint {} has no tokenizer.model and its state.json records no tokenizer checksum, so the "
         "tokenizer cannot be identified; re-save the checkpoint with its tokenizer",
         dir);
  if (!fs::exists(path))
    fail("checkpoint {} has no tokenizer.model and the config's tokenizer.path '{}' does not exist; {}", dir, path,
         tokenizer_restore_advice(dir, state.tokenizer_xxh64, ""));
  std::string actual = tokenizer_xxh64(path);
  if (actual != state.tokenizer_xxh64)
    fail("checkpoint {} has no tokenizer.model and '{}' has checksum {}, not the {} recorded in training: it is a "
         "different tokenizer; {}",
         dir, path, actual, state.tokenizer_xxh64, tokenizer_restore_advice(dir, state.tokenizer_xxh64, ""));
  log_info("load", "checkpoint has no tokenizer copy; using {} (checksum matches)", path);
  return std::make_unique<Tokenizer>(Tokenizer::load(path));
}

}  // namespace

std::string checkpoint_resolve(const std::string& path) {
  const fs::path p(path);
  if (!fs::exists(p)) fail("'{}' does not exist; pass a run directory or a checkpoint directory", path);
  if (is_checkpoint(p)) return p.string();
  for (const fs::path& root : {p / "checkpoints", p}) {
    if (!fs::exists(root / "latest")) continue;
    std::string dir = checkpoint_latest(root.string());
    if (!dir.empty()) return dir;
  }
  fail("'{}' is neither a checkpoint (no model.safetensors), a checkpoints directory (no latest) nor a run "
       "directory (no checkpoints/latest); has the run saved a checkpoint yet?",
       path);
}

namespace {

LoadedModel model_load_from(const std::string& dir, Precision precision) {
  LoadedModel out;
  out.checkpoint_dir = dir;
  const std::string config_path = dir + "/config.yaml", state_path = dir + "/state.json";
  out.config = checkpoint_file_read(dir, [&] { return config_parse(file_read_text(config_path), config_path); });
  // The tokenizer first: the config may leave the vocabulary size, hence the tensor shapes, to it.
  const TrainState state =
      checkpoint_file_read(dir, [&] { return train_state_parse(file_read_text(state_path), state_path); });
  out.tokenizer = tokenizer_of(dir, state, out.config);
  const int V = out.tokenizer->vocab_size();
  if (out.config.model.vocab_size != 0 && out.config.model.vocab_size != V)
    fail("checkpoint {}: the model has vocabulary {} but its tokenizer {} has {}; they do not belong together",
         dir, out.config.model.vocab_size, out.tokenizer->origin(), V);
  out.config.model.vocab_size = V;
  const ModelSpec spec = model_spec_make(out.config.model, out.config.attention);
  // The weights only: model.safetensors is read tensor by tensor straight into the arena.
  memory_require(memory_estimate_model(spec, precision, ModelUse::inference),
                 fmt::format("loading the model of {}", dir));
  // Validates state.json, the tokenizer copy's checksum and every tensor's name, dtype and shape.
  LoadedCheckpoint ck = checkpoint_load(dir, model_tensor_specs(spec), {});
  out.step = ck.state.step;
  out.model = std::make_unique<Model<float>>(spec, precision);
  model_tensors_load(*out.model, ck);
  out.model->bf16_refresh();  // bf16: the copies of the loaded weights
  log_info("load", "{}: {} model, {} layers, width {}, vocab {}, step {}, {} products", dir,
           model_spec_attention_text(spec), spec.L, spec.C, spec.V, out.step, enum_name(precision));
  return out;
}

}  // namespace

LoadedModel model_load(const std::string& run_or_checkpoint, Precision precision) {
  if (precision == Precision::bf16)
    bf16_require("--precision bf16", "pass --precision fp32 (the default) on this machine");
  return checkpoint_read_retrying(run_or_checkpoint,
                                  [&](const std::string& dir) { return model_load_from(dir, precision); });
}

bool checkpoint_was_pruned(const std::string& dir, const std::string& run_or_checkpoint) {
  return !fs::exists(dir) && fs::path(dir) != fs::path(run_or_checkpoint);
}

void checkpoint_log_pruned(const std::string& dir) {
  log_info("load", "checkpoint {} was pruned by the running trainer while it was read; reading the newest", dir);
}

}  // namespace rfa
