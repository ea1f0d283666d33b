#pragma once
// Where a run's first step in this process starts: step 0 of a new run (or of a fine-tune), or
// the step of the checkpoint it resumes (train/train_resume.h), with what that checkpoint
// carried; and the state.json fields that stay fixed for the whole run.
#include <cstdint>
#include <limits>
#include <string>

#include "checkpoint/train_state.h"
#include "config/config.h"
#include "train/train_init.h"

namespace rfa {

class StreamCheckpoint;
class TrainSession;
struct TrainOptions;

struct TrainStart {
  int64_t step = 0;         // the first step to take, 0-based: the optimizer steps already taken
  int64_t tokens_seen = 0;  // by the run, earlier processes included
  double wall_before = 0;   // training wall time of the run before this process
  double best_val_loss = std::numeric_limits<double>::infinity();
  // Seed, tokenizer checksum, threads, ranks, grad_accum and the fine-tune's parent; each
  // checkpoint fills in the rest (train/train_checkpoints.h).
  TrainState state;
};

// A new run at step 0; `init` (a fine-tune's parent, or null) is recorded as its parent.
TrainStart train_start_new(const Config& config, const std::string& tokenizer_bytes, const InitPoint* init);

// A resume from options.resume_checkpoint: refuses a checkpoint of another global batch
// (ranks x grad_accum) before its tensors load, then loads it into `session` (and a stateful
// run's `streams`); refuses one of another tokenizer than `tokenizer_bytes`, one at or past
// train.steps, and a --stop-after that is not after its step; warns when its thread count
// differs (the run continues, not bit-identically). Keeps the parent it records.
TrainStart train_start_resumed(TrainSession& session, StreamCheckpoint* streams, const TrainOptions& options,
                               const std::string& tokenizer_bytes);

// A resumed DPO run's reference: its parent (train.init_from, as state.json records it), which
// must still be the model the run started from (state.json records its checksum).
InitPoint train_start_dpo_parent(const Config& config, const std::string& checkpoint_dir);

}  // namespace rfa
