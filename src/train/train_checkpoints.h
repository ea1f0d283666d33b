#pragma once
// A run's checkpoints (RUN/checkpoints/step-NNNNNN, checkpoint/checkpoint_dir.h: written
// atomically, the last checkpoint.keep_last and the best by val loss kept): every
// checkpoint.every steps, at the last step, and at a stop (train/train_loop.h decides when).
// Every rank calls save() at the same point of the loop, since a stateful run's carried states
// are gathered from all ranks first (a collective); then only the run directory's owner
// (train/run_dir_owner.h: rank 0) writes.
#include <cstdint>
#include <string>

#include "checkpoint/train_state.h"

namespace rfa {

class ProgressLine;
class TrainSetup;

// The run's totals after the step a checkpoint saves, as state.json records them.
struct CheckpointTotals {
  int64_t tokens_seen = 0;
  double wall_seconds = 0;  // training wall time of the whole run, earlier processes included
  double best_val_loss = 0;
};

class TrainCheckpoints {
 public:
  // A resumed run's newest checkpoint on disk is the one it resumes (setup.start()).
  TrainCheckpoints(TrainSetup& setup, const std::string& resumed_checkpoint, ProgressLine& progress);

  // Saves the state after `done` steps (val_loss < 0: none measured at this step); returns
  // the checkpoint's directory on the owner, "" on the other ranks. On the owner, throws
  // Error saying which checkpoint survives and how to go on if an update left a weight
  // non-finite (such a checkpoint would become `latest`, prune good ones and only fail when
  // loaded) or the write fails (a full disk, mostly).
  std::string save(int64_t done, double val_loss, const CheckpointTotals& totals);

  bool on_disk(int64_t step) const { return saved_step_ == step; }  // the newest is of `step`
  const std::string& newest() const { return saved_dir_; }           // "" if none exists

 private:
  TrainSetup& setup_;
  ProgressLine& progress_;
  TrainState state_;        // the run's fixed fields (TrainStart); save() fills in the rest
  int64_t saved_step_ = -1;  // the newest checkpoint on disk: its step and directory
  std::string saved_dir_;
};

}  // namespace rfa
