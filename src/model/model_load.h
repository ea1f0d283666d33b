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

// precision bf16 (--precision bf16) also builds the bf16 weight copies the decoder's
// products read; it needs AVX512-BF16 and says so otherwise.
LoadedModel model_load(const std::string& run_or_checkpoint, Precision precision = Precision::fp32);

}  // namespace rfa
