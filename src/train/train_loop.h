#pragma once
// The training loop of train_run (train/train_run.h), from the setup's start step to
// train.steps:
//   - a fine-tune first logs its parent's val loss (step 0);
//   - each iteration takes one optimizer step over the run's data (TrainBatches::step), then
//     follows the cadence (train/train_cadence.h): evaluation, log line, the ranks' weight check
//     (divergence), checkpoint;
//   - stops: a signal (core/stop_signals.h) inside a step drops the step and saves the last
//     finished one; after a step the ranks agree on any rank's signal, or --stop-after's step
//     comes: it saves and returns (result.interrupted).
// The run directory's owner (rank 0) alone evaluates and writes metrics.jsonl; every rank takes
// part in the collectives (the stop agreement, the weight check, a checkpoint's gather).
#include "core/timer.h"
#include "train/train_run.h"

namespace rfa {

class TrainSetup;

// `wall` runs from before the run directory was locked: the run's wall time in this process.
TrainResult train_loop(TrainSetup& setup, const TrainOptions& options, const Timer& wall);

}  // namespace rfa
