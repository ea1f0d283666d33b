#pragma once
// When a training step evaluates, logs and checkpoints. `done` counts the optimizer steps
// completed (1-based: the step just taken), as the log lines and checkpoint names count them.
#include <cstdint>

#include "config/config.h"

namespace rfa {

struct TrainCadence {
  const Config& config;
  int64_t first_done = 1;  // the first step this process takes, 1-based (a resume: its checkpoint's step + 1)
  int64_t stop_after = 0;  // --stop-after; 0 = never

  bool last(int64_t done) const { return done == config.train.steps; }
  // Every train.eval_every steps (0: none but these), the last step, and --stop-after's step.
  bool eval_due(int64_t done) const {
    const int every = config.train.eval_every;
    return (every > 0 && done % every == 0) || last(done) || done == stop_after;
  }
  // Every train.log_every steps the ranks prove their weights still agree (train/train_dist.h).
  bool weights_check_due(int64_t done) const { return done % config.train.log_every == 0; }
  // A log line and a metrics.jsonl "train" line: every train.log_every steps, this process's first
  // step, the last, a stop, and a step with a fresh val loss. The steps between redraw the progress line.
  bool log_due(int64_t done, bool stopping, bool evaluated) const {
    return done % config.train.log_every == 0 || done == first_done || last(done) || stopping || evaluated;
  }
  // Every checkpoint.every steps (0: none but these), the last step, and a stop.
  bool checkpoint_due(int64_t done, bool stopping) const {
    const int64_t every = config.checkpoint.every;
    return (every > 0 && done % every == 0) || last(done) || stopping;
  }
};

}  // namespace rfa
