#include "train/train_start.h"

#include "config/config_load.h"
#include "core/error.h"
#include "core/log.h"
#include "core/parallel.h"
#include "dist/dist.h"
#include "io/file_io.h"
#include "io/hash.h"
#include "train/train_dist.h"
#include "train/train_resume.h"
#include "train/train_run.h"
#include "train/train_session.h"

namespace rfa {
namespace {

// What state.json records of every run, whatever it starts from.
TrainState state_of_run(const TrainConfig& tc, const std::string& tokenizer_bytes) {
  TrainState state;
  state.seed = tc.seed;
  state.tokenizer_xxh64 = hash_hex(xxhash64(tokenizer_bytes.data(), tokenizer_bytes.size()));
  state.threads = thread_count();
  state.ranks = dist_size();
  state.grad_accum = tc.grad_accum;
  return state;
}

// train.grad_accum of the run that wrote a checkpoint, from its config.yaml (for state.json
// files that did not record it).
int saved_grad_accum(const std::string& checkpoint_dir) {
  const std::string path = checkpoint_dir + "/config.yaml";
  return config_parse(file_read_text(path), path).train.grad_accum;
}

// Refuses a resume that changes ranks x grad_accum, from the checkpoint's state.json before
// its tensors load: a stateful checkpoint's stream shapes (ranks x grad_accum, B) would
// otherwise refuse it first, naming a tensor instead of the fix.
void resume_global_batch_check(const std::string& checkpoint_dir, int grad_accum) {
  const std::string path = checkpoint_dir + "/state.json";
  train_dist_resume_check(train_state_parse(file_read_text(path), path), saved_grad_accum(checkpoint_dir),
                          grad_accum, checkpoint_dir);
}

}  // namespace

TrainStart train_start_new(const Config& config, const std::string& tokenizer_bytes, const InitPoint* init) {
  TrainStart start;
  start.state = state_of_run(config.train, tokenizer_bytes);
  if (init) {
    start.state.init_from = init->checkpoint_dir;
    start.state.init_from_step = init->step;
    start.state.init_from_xxh64 = init->model_xxh64;
  }
  return start;
}

TrainStart train_start_resumed(TrainSession& session, StreamCheckpoint* streams, const TrainOptions& options,
                               const std::string& tokenizer_bytes) {
  const TrainConfig& tc = session.config().train;
  const std::string& checkpoint = options.resume_checkpoint;
  TrainStart start;
  start.state = state_of_run(tc, tokenizer_bytes);
  resume_global_batch_check(checkpoint, tc.grad_accum);
  const TrainState saved = resume_load(session, checkpoint, streams);
  if (saved.tokenizer_xxh64 != start.state.tokenizer_xxh64)
    fail("checkpoint {} records tokenizer checksum {} but the run's tokenizer has {}", checkpoint,
         saved.tokenizer_xxh64, start.state.tokenizer_xxh64);
  if (saved.step >= tc.steps)
    fail("checkpoint {} is at step {} and train.steps is {}: nothing to train; extend the run with "
         "--set train.steps=N (N > {})",
         checkpoint, saved.step, tc.steps, saved.step);
  if (saved.threads != 0 && saved.threads != start.state.threads)
    log_warn("train", "checkpoint {} was trained with {} threads and this run has {}: it continues correctly but "
             "not bit-identically to an uninterrupted run (sums are split by thread); pass --threads {} for that",
             checkpoint, saved.threads, start.state.threads, saved.threads);
  start.step = saved.step;
  if (options.stop_after > 0 && options.stop_after <= start.step)
    fail("--stop-after {} is not after the checkpoint's step {}; pass a later step", options.stop_after, start.step);
  start.tokens_seen = saved.tokens_seen;
  start.wall_before = saved.wall_seconds;
  start.best_val_loss = saved.best_val_loss;
  start.state.init_from = saved.init_from;  // a fine-tune's parent stays recorded
  start.state.init_from_step = saved.init_from_step;
  start.state.init_from_xxh64 = saved.init_from_xxh64;
  return start;
}

InitPoint train_start_dpo_parent(const Config& config, const std::string& checkpoint_dir) {
  const std::string path = checkpoint_dir + "/state.json";
  const TrainState saved = train_state_parse(file_read_text(path), path);
  Config from = config;
  if (!saved.init_from.empty()) from.train.init_from = saved.init_from;  // the very checkpoint it started from
  // The run's saved config gives every key.
  const InitPoint parent = init_from_prepare(from, config_origins_all(checkpoint_dir + "/config.yaml"));
  if (parent.model_xxh64 != saved.init_from_xxh64)
    fail("--resume {}: DPO's reference is the run's parent {}, whose model.safetensors now has checksum {}, not the "
         "{} it started from; restore that checkpoint (the reference log-probabilities are computed from it)",
         checkpoint_dir, parent.checkpoint_dir, parent.model_xxh64, saved.init_from_xxh64);
  return parent;
}

}  // namespace rfa
