#pragma once
// `rfa train`: the whole run. Prepares data if missing, builds the model from
// the config, trains config.train.steps optimizer steps with warmup + cosine
// LR, evaluates every eval_every steps (and at the end), logs every log_every
// steps, and writes the run directory:
//   run_dir/config.yaml       the resolved config (vocab size filled in)
//   run_dir/tokenizer.model   a copy of the tokenizer
//   run_dir/metrics.jsonl     one JSON line per logged step and per evaluation
//   run_dir/train.log         the log lines
//   run_dir/checkpoints/step-NNNNNN/  every checkpoint.every steps and at the end
//   run_dir/.lock             flocked for the whole run (train/run_dir_lock.h): one trainer per directory
// Before anything in run_dir is replaced, the run validates and allocates all it needs
// (data, vocab, model, the checkpoint it resumes); a run that fails before its first
// checkpoint leaves no directory or file it created behind.
// SIGINT/SIGTERM/SIGHUP/SIGUSR1 not inherited as ignored (core/stop_signals.h) stop at the next micro-batch or evaluation
// batch: a step cut short is dropped whole (nothing of it is applied), the state after
// the last finished step is saved as a checkpoint (unless one is on disk already) and
// train_run returns (result.interrupted); `rfa train --resume RUN_DIR` continues from
// it exactly as an uninterrupted run would. A signal stop records no val loss.
#include <cstdint>
#include <string>

#include "config/config.h"
#include "config/config_load.h"

namespace rfa {

struct TrainResult {
  int64_t steps = 0;             // optimizer steps completed
  double final_train_loss = 0;   // mean over the last log interval
  double final_val_loss = 0;
  double best_val_loss = 0;
  double train_seconds = 0;      // wall time in steps (evaluation excluded)
  double wall_seconds = 0;       // whole run
  double tokens_per_s = 0;       // training tokens / train_seconds
  std::string checkpoint_dir;    // the last checkpoint written ("" if none)
  bool interrupted = false;
};

struct TrainOptions {
  // A checkpoint directory to continue from (train/train_resume.h: resume_prepare
  // gives it with its config and tokenizer); "" starts from scratch.
  std::string resume_checkpoint;
  std::string resume_tokenizer;  // the tokenizer model the checkpoint was trained with
  // Stop after this optimizer step (evaluate, save, return); 0 = never.
  int64_t stop_after = 0;
  // A new run (or a resume forking into another train.run_dir) refuses a run directory
  // that already holds checkpoints (nothing is lost by accident); overwrite deletes them,
  // once everything else has been validated and allocated.
  bool overwrite = false;
  // The keys the config gave (config_load_with_origins): with train.init_from, those left out
  // are taken from the parent and those given must equal it (train/train_init.h).
  ConfigOrigins config_origins;
};

TrainResult train_run(const Config& config, const TrainOptions& options = {});

}  // namespace rfa
