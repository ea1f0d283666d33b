#include "model/model_load.h"

#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/file_io.h"
#include "checkpoint/xxhash64.h"
#include "config/config_load.h"
#include "core/error.h"
#include "core/log.h"
#include "model/model_io.h"
#include "model/model_spec.h"

namespace rfa {
namespace {

namespace fs = std::filesystem;

bool is_checkpoint(const fs::path& p) { return fs::exists(p / "model.safetensors"); }

// The tokenizer the model was trained with: never guessed. The checkpoint's own
// copy (already checked against state.json by checkpoint_load), else the
// config's path if it is byte-identical to the one recorded in state.json.
std::unique_ptr<Tokenizer> tokenizer_of(const LoadedCheckpoint& ck, const Config& config) {
  if (!ck.tokenizer_path.empty()) return std::make_unique<Tokenizer>(Tokenizer::load(ck.tokenizer_path));
  const std::string& path = config.tokenizer.path;
  if (ck.state.tokenizer_checksum.empty())
    fail("checkpoint {} has no tokenizer.model and its state.json records no tokenizer checksum, so the "
         "tokenizer cannot be identified; re-save the checkpoint with its tokenizer",
         ck.dir);
  if (!fs::exists(path))
    fail("checkpoint {} has no tokenizer.model and the config's tokenizer.path '{}' does not exist; copy the "
         "tokenizer used in training to {}/tokenizer.model",
         ck.dir, path, ck.dir);
  std::string actual = file_checksum(path);
  if (actual != ck.state.tokenizer_checksum)
    fail("checkpoint {} has no tokenizer.model and '{}' has checksum {}, not the {} recorded in training; "
         "it is a different tokenizer. Copy the training tokenizer to {}/tokenizer.model",
         ck.dir, path, actual, ck.state.tokenizer_checksum, ck.dir);
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

LoadedModel model_load(const std::string& run_or_checkpoint) {
  LoadedModel out;
  out.checkpoint_dir = checkpoint_resolve(run_or_checkpoint);
  const std::string config_path = out.checkpoint_dir + "/config.yaml";
  out.config = config_parse(file_read_text(config_path), config_path);
  // The tensor list depends on V; read the tokenizer first when the config left V to it.
  LoadedCheckpoint ck;
  {
    // state.json and the tokenizer are validated by checkpoint_load; read the
    // weights once the expected shapes are known.
    const std::string tok_copy = out.checkpoint_dir + "/tokenizer.model";
    int V = out.config.model.vocab_size;
    if (V == 0) {
      if (!fs::exists(tok_copy))
        fail("{} leaves model.vocab_size to the tokenizer but the checkpoint has no tokenizer.model",
             config_path);
      V = Tokenizer::load(tok_copy).vocab_size();
    }
    ModelConfig mc = out.config.model;
    mc.vocab_size = V;
    ck = checkpoint_load(out.checkpoint_dir, model_tensor_specs(model_spec_make(mc, out.config.attention)), {});
    out.config.model.vocab_size = V;
  }
  out.tokenizer = tokenizer_of(ck, out.config);
  if (out.tokenizer->vocab_size() != out.config.model.vocab_size)
    fail("checkpoint {}: the model has vocabulary {} but its tokenizer {} has {}; they do not belong together",
         out.checkpoint_dir, out.config.model.vocab_size, out.tokenizer->origin(), out.tokenizer->vocab_size());
  out.step = ck.state.step;
  out.model = std::make_unique<Model<float>>(model_spec_make(out.config.model, out.config.attention));
  model_tensors_load(*out.model, ck.model);
  log_info("load", "{}: {} model, {} layers, width {}, vocab {}, step {}", out.checkpoint_dir,
           attention_kind_name(out.config.attention.kind), out.config.model.n_layers, out.config.model.d_model,
           out.config.model.vocab_size, out.step);
  return out;
}

}  // namespace rfa
