#pragma once
// A training run from its first refusal to its first step (train/train_run.h), in the order
// that lets everything that can refuse the run come before anything in run_dir is replaced:
//   1. train_preflight: what the config alone decides (kernels, precision, DPO's parent, memory);
//   2. the run directory, on rank 0 only (train/run_dir_owner.h): lock, train.log, may it be
//      replaced;
//   3. the data: rank 0 prepares what is missing while the other ranks wait, then all open it;
//      the vocab, the batches, the session (model, AdamW), a fine-tune's parent weights,
//      DPO's reference;
//   4. where the run starts (train/train_start.h): step 0, or the checkpoint it resumes;
//   5. only then does rank 0 replace an earlier run (--overwrite) and write config.yaml,
//      tokenizer.model and metrics.jsonl; every rank proves it holds the same weights.
#include <optional>

#include "config/config.h"
#include "train/run_dir_owner.h"
#include "train/train_batches.h"
#include "train/train_data.h"
#include "train/train_init.h"
#include "train/train_run.h"
#include "train/train_session.h"
#include "train/train_start.h"
#include "train/train_streams.h"

namespace rfa {

// Throws Error naming the key or the flag and its fix. Reads nothing but the config and the
// machine (on several ranks: their kernels, all-gathered), writes nothing.
void train_preflight(const Config& config, const TrainOptions& options, const InitPoint* init);

class TrainSetup {
 public:
  // `init`: a fine-tune's parent (train/train_init.h), or null. Throws Error for anything that
  // refuses the run; what rank 0 created by then is removed (train/run_dir_lock.h).
  TrainSetup(const Config& config, const TrainOptions& options, const InitPoint* init);
  TrainSetup(const TrainSetup&) = delete;
  TrainSetup& operator=(const TrainSetup&) = delete;

  const Config& config() const { return config_; }  // model.vocab_size resolved from the tokenizer
  TrainSession& session() { return session_; }
  TrainBatches& batches() { return batches_; }
  StreamCheckpoint* streams() { return streams_ ? &*streams_ : nullptr; }  // train.stateful's, else null
  // The run directory's owner: rank 0's; null on the other ranks, which write nothing there.
  RunDirOwner* owner() { return owner_ ? &*owner_ : nullptr; }
  const TrainStart& start() const { return start_; }
  bool fine_tune() const { return fine_tune_; }  // a new run from a parent's weights

 private:
  std::optional<RunDirOwner> owner_;  // first: the lock comes before anything is read
  TrainData data_;
  Config config_;
  TrainBatches batches_;  // reads data_.tokens and config_
  TrainSession session_;
  std::optional<StreamCheckpoint> streams_;
  TrainStart start_;
  bool fine_tune_ = false;
};

}  // namespace rfa
