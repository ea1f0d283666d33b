#pragma once
// `rfa train --init-from RUN|CHECKPOINT` (train.init_from): a new run that starts from a
// trained model's weights instead of random ones, i.e. fine-tuning. What carries over
// is the parent's model.safetensors (every weight and each RFA layer's fixed random
// matrices), its architecture and its tokenizer; nothing else: the child starts at
// step 0 with zero AdamW moments, its own schedule, seed and data, and no best val loss.
//
// The architecture comes from the parent: each model.*, attention.* and tokenizer.* key
// the new config leaves out (not in config_load's origins) is taken from the parent's
// config.yaml; one it gives with another value than the parent's, its default included, is
// refused naming where it was given, the key and both values, except the keys that cannot
// change what the weights compute (init_key_changeable):
// model.context_length (no parameter depends on T: RFA has no positions to outgrow, and
// RoPE's angles are computed for any position) and attention.chunk_size (how the
// training form is blocked, not what it computes). The parent's tokenizer.path and
// tokenizer.corpus are compared and taken as it used them: its "" defaults resolved against
// its own corpus (config_tokenizer_path), so the child's config names the parent's tokenizer
// and the corpus it was trained on, and a foreign-tokenizer warning has nothing to say.
#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.h"
#include "config/config_load.h"

namespace rfa {

class TrainSession;

struct InitPoint {
  std::string checkpoint_dir;   // the parent checkpoint
  std::string tokenizer_path;   // its tokenizer (the checkpoint's copy, checksum-checked)
  Config config;                // the child's config with the parent's architecture and tokenizer
  int64_t step = 0;             // the parent's optimizer step
  std::string model_xxh64;      // XXH64 of the parent's model.safetensors, recorded in the child's state.json
};

// model.context_length and attention.chunk_size.
bool init_key_changeable(std::string_view key);

// Resolves child.train.init_from (a run directory, a checkpoints directory or a checkpoint)
// and merges the parent's architecture and tokenizer into `child` (above); `given` holds the
// keys the child's config gave (config_load_with_origins; config_origins_all for a saved
// config, which gives every key). Reads only: throws Error before anything is written,
// naming the key and both values, or the fix when the child's train.run_dir is the parent's
// own run.
InitPoint init_from_prepare(const Config& child, const ConfigOrigins& given);

// Loads the parent's weights and fixed random matrices into `session` (built from
// point.config), validating every tensor's name, dtype and shape. AdamW's moments and
// step count stay as constructed: zero.
void init_from_load(TrainSession& session, const InitPoint& point);

}  // namespace rfa
