#pragma once
// `rfa train --resume PATH`: continuing a run from one of its checkpoints so
// that the continuation is bit-identical to a run that never stopped (at the
// same thread count). What makes that possible is in the checkpoint: the
// weights, the fixed evaluation random matrices, AdamW's moments and step
// count, and state.json's step; the per-step random matrices and the batches
// are pure functions of (seed, step) (core/rng.h, data/batch_sampler.h), so
// nothing else needs saving, except a stateful run's carried states
// (stream.safetensors, train/train_streams.h).
//
// The config is the one saved in the checkpoint. `--set` may change only the
// keys that cannot change what is computed for a step (resume_key_changeable):
// how long to train, logging/evaluation/checkpoint cadence, where files are.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/train_state.h"
#include "config/config.h"

namespace rfa {

class StreamCheckpoint;
class TrainSession;

struct ResumePoint {
  std::string checkpoint_dir;  // the checkpoint to continue from
  std::string tokenizer_path;  // the checkpoint's tokenizer copy (checksum-checked), or the config's
  Config config;               // the saved config, --set applied; train.run_dir is the run being continued
};

// True for keys a --set may change on resume: train.steps, train.log_every,
// train.eval_every, train.eval_batches, train.run_dir, checkpoint.*,
// data.corpus, data.tokens, tokenizer.path (locations; the token data is
// checked against the checkpoint's tokenizer when it is opened).
bool resume_key_changeable(std::string_view key);

// PATH is a run directory (continues from checkpoints/latest), a checkpoints
// directory, or one checkpoint directory (e.g. RUN/checkpoints/step-000500).
// The run directory is the checkpoint's grand-parent when its parent is named
// `checkpoints`, else the saved train.run_dir; `--set train.run_dir=...`
// forks into another directory. Throws Error naming any key the sets change
// that may not change, with both values.
ResumePoint resume_prepare(const std::string& path, const std::vector<std::string>& sets);

// Loads and validates the checkpoint (every tensor's name, dtype and shape,
// checksums, format version) into `session`: parameters, fixed random
// matrices, AdamW m and v and its step count; with `streams` (a stateful run) also
// stream.safetensors, whose states go into the session. Returns its state.json.
// Throws if the state's seed is not the session's train.seed.
TrainState resume_load(TrainSession& session, const std::string& checkpoint_dir, StreamCheckpoint* streams = nullptr);

// True if `checkpoint_dir` is one of run `run_dir`'s checkpoints (RUN/checkpoints/step-N).
// A resume into another directory is a fork, which must not hold another run either.
bool checkpoint_in_run(const std::string& checkpoint_dir, const std::string& run_dir);

// Rewrites metrics.jsonl keeping only the lines of steps <= `step`: a run
// stopped or killed after its checkpoint wrote lines the resumed run writes
// again. Lines that do not parse are dropped. A missing file is left missing.
void metrics_keep_through(const std::string& path, int64_t step);

}  // namespace rfa
