#pragma once
// Loading a trained model for inference (generation, evaluation) from a run
// directory or one checkpoint directory. Everything comes from the checkpoint:
// the config (config.yaml), the weights and fixed random matrices
// (model.safetensors, every tensor validated by name, dtype and shape) and the
// tokenizer (the checkpoint's tokenizer.model copy; only when there is none,
// the config's tokenizer.path, accepted if its checksum matches state.json).
#include <cstdint>
#include <memory>
#include <string>

#include "config/config.h"
#include "core/error.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace rfa {

struct LoadedModel {
  Config config;                       // as saved with the checkpoint, vocab_size resolved
  std::string checkpoint_dir;          // the directory actually read
  int64_t step = 0;                    // optimizer steps the weights had seen
  std::unique_ptr<Model<float>> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// The checkpoint directory a path names: a checkpoint itself (has
// model.safetensors), a checkpoints root (has `latest`), or a run directory
// (RUN/checkpoints/latest). Throws Error listing what was looked for.
std::string checkpoint_resolve(const std::string& run_or_checkpoint);

// Calls read(dir) with the checkpoint directory run_or_checkpoint resolves to and
// returns its result. Reading a run while it trains, the trainer may prune the
// checkpoint `latest` named between our resolving it and opening its files
// (checkpoint.keep_last): that is not the user's error, so when read throws and the
// directory has vanished, the path is resolved again (up to 5 times). A checkpoint
// named directly is never re-resolved. (Files already open stay readable after their
// removal; only opening fails.)
bool checkpoint_was_pruned(const std::string& dir, const std::string& run_or_checkpoint);
void checkpoint_log_pruned(const std::string& dir);
template <typename Read>
auto checkpoint_read_retrying(const std::string& run_or_checkpoint, Read read) {
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    const std::string dir = checkpoint_resolve(run_or_checkpoint);
    try {
      return read(dir);
    } catch (const Error&) {
      if (attempt == kAttempts || !checkpoint_was_pruned(dir, run_or_checkpoint)) throw;
      checkpoint_log_pruned(dir);
    }
  }
}

// precision bf16 (--precision bf16) also builds the bf16 weight copies the decoder's
// products read; it needs AVX512-BF16 and says so otherwise.
LoadedModel model_load(const std::string& run_or_checkpoint, Precision precision = Precision::fp32);

}  // namespace rfa
