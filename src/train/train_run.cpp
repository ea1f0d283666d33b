#include "train/train_run.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/ranges.h>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/train_state.h"
#include "io/file_io.h"
#include "io/hash.h"
#include "config/config_enums.h"
#include "config/config_load.h"
#include "core/error.h"
#include "io/file_util.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/stop_signals.h"
#include "core/timer.h"
#include "core/memory_check.h"
#include "dist/dist.h"
#include "model/memory_estimate.h"
#include "model/model_io.h"
#include "optim/grad_clip.h"
#include "train/run_dir_lock.h"
#include "train/train_data.h"
#include "train/train_batches.h"
#include "train/train_dist.h"
#include "tokenizer/model_proto.h"
#include "train/train_init.h"
#include "train/train_report.h"
#include "train/train_resume.h"
#include "train/train_session.h"
#include "train/train_streams.h"
#include "train/train_validation.h"

namespace rfa {
namespace {

Config resolve_vocab(Config c, const Tokenizer& tok) {
  if (c.model.vocab_size == 0) {
    c.model.vocab_size = tok.vocab_size();
  } else if (c.model.vocab_size != tok.vocab_size()) {
    fail("model.vocab_size {} differs from the tokenizer {} ({} tokens); set model.vocab_size: 0 to follow the "
         "tokenizer",
         c.model.vocab_size, tok.origin(), tok.vocab_size());
  }
  return c;
}

std::string save_checkpoint(TrainSession& session, const Config& config, const std::string& run_dir,
                            const TrainState& state, const StreamCheckpoint* streams) {
  Model<float>& m = session.model();
  CheckpointContents contents;
  contents.model = model_tensor_refs(m);
  contents.optimizer = optimizer_tensor_refs(m, session.adam_m(), session.adam_v());
  if (streams) contents.streams = streams->refs();  // gathered from every rank by the caller
  contents.state = state;
  contents.config_yaml = config_dump(config);
  contents.tokenizer_path = run_dir + "/tokenizer.model";
  return checkpoint_save(run_dir + "/checkpoints", contents, config.checkpoint);
}

// A run writes RUN/config.yaml and RUN/metrics.jsonl whole: in a directory that is not a run
// (train.run_dir=. next to a user's own config.yaml) they would replace the user's files.
// Files an earlier rfa run wrote (a run that stopped before its first checkpoint) begin as
// rfa writes them; anything else is refused unless --overwrite.
void run_dir_foreign_check(const std::string& run_dir) {
  namespace fs = std::filesystem;
  const std::pair<const char*, const char*> ours[] = {{"config.yaml", "# rfa configuration"},
                                                      {"metrics.jsonl", "{\"type\":"}};
  std::vector<std::string> foreign;
  for (const auto& [name, start] : ours) {
    const std::string path = run_dir + "/" + name;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) continue;
    if (!fs::is_regular_file(st)) {
      foreign.push_back(path);
      continue;
    }
    std::ifstream in(path, std::ios::binary);
    std::string line;
    std::getline(in, line);
    if (!line.empty() && !line.starts_with(start)) foreign.push_back(path);
  }
  if (!foreign.empty())
    fail("train.run_dir '{}' holds files that no rfa run wrote and a run would replace with its own: {}; pick "
         "another directory with --set train.run_dir=..., or pass --overwrite to replace them",
         run_dir, fmt::join(foreign, ", "));
}

// A new run must not silently mix with (or prune) an earlier run's checkpoints. Returns
// true if the directory holds a run that --overwrite allows replacing; the caller deletes
// it (run_dir_clear) only once the new run has validated and allocated everything.
bool run_dir_claim(const std::string& run_dir, bool overwrite) {
  if (!overwrite) run_dir_foreign_check(run_dir);
  const std::string latest = checkpoint_latest(run_dir + "/checkpoints");
  if (latest.empty()) return false;
  if (!overwrite)
    fail("train.run_dir '{}' already holds a run (latest checkpoint {}); continue it with `rfa train --resume {}`, "
         "pick another directory with --set train.run_dir=..., or pass --overwrite to delete it",
         run_dir, latest, run_dir);
  return true;
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

void run_dir_clear(const std::string& run_dir) {
  const std::string checkpoints = run_dir + "/checkpoints";
  log_warn("train", "--overwrite: deleting the earlier run's checkpoints in {}", checkpoints);
  std::error_code ec;
  std::filesystem::remove_all(checkpoints, ec);
  if (ec) fail("--overwrite: cannot delete the earlier run's checkpoints in {}: {}", checkpoints, ec.message());
}

// Refuses a run that cannot fit in memory before anything is written or
// allocated. Without model.vocab_size the tokenizer's configured size stands in
// (exact for bpe and unigram, an upper bound for char).
void memory_require_training(const Config& c) {
  ModelConfig model = c.model;
  if (model.vocab_size == 0) model.vocab_size = c.tokenizer.vocab_size;
  memory_require(memory_estimate_train(model_spec_make(model, c.attention), c.train, thread_count(), dist_size()),
                 "training this model");
}

// The run's data: prepared with the tokenizer a resume or a fine-tune must use, when given.
TrainData train_data_for(const Config& config, const std::string& tokenizer_path, const InitPoint* init) {
  try {
    TrainData data = train_data_ensure(config, tokenizer_path);
    // Made from the parent's corpus by design: no warning (data/data_setup.h), but say which.
    if (init) {
      const std::string trained_on = model_proto_training_input(data.tokenizer.model_bytes());
      log_info("init", "this run's corpus {} is encoded with the parent's tokenizer {}{}", config.data.corpus,
               init->tokenizer_path, trained_on.empty() ? "" : fmt::format(", trained on {}", trained_on));
    }
    return data;
  } catch (const Error& e) {
    if (!init) throw;
    throw Error(fmt::format("{} (--init-from: this run's corpus is encoded with the parent's tokenizer {}; point "
                            "data.tokens at a new file and it is created)",
                            e.what(), init->tokenizer_path));
  }
}

// A resumed DPO run's reference: its parent (train.init_from), which must still be the model
// the run started from (state.json records its checksum).
InitPoint dpo_parent(const Config& config, const std::string& checkpoint_dir) {
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

// train_run with `init` (a fine-tune, train/train_init.h) or without.
TrainResult train_run_with(const Config& config_in, const TrainOptions& options, const InitPoint* init) {
  train_dist_kernels_check();
  train_precision_require(config_in.train.precision);
  if (config_preference(config_in.data) && !init && options.resume_checkpoint.empty())
    fail("data.format preference trains by DPO against a frozen reference, the model it starts from: give "
         "--init-from RUN (an instruction-tuned run, as a rule) or set train.init_from");
  memory_require_training(config_in);
  Timer wall;
  const std::string run_dir = config_in.train.run_dir;
  // Data parallel: rank 0 alone owns the run directory (lock, log file, metrics, checkpoints)
  // and prepares missing data while the other ranks wait, then they open it.
  const bool root = dist_is_root();
  // Held to the end: refuses a second trainer, probes writability, removes its own files if the run fails before a checkpoint.
  std::optional<RunDirLock> run_lock;
  if (root) run_lock.emplace(run_dir);
  if (root) log_add_file(run_dir + "/train.log");
  const bool resuming = !options.resume_checkpoint.empty();
  // Everything that can refuse the run comes before anything in run_dir is replaced: the
  // data, the vocab, the model's allocation, the checkpoint to resume. run_dir_clear is last.
  const bool replacing = root && (!resuming || !checkpoint_in_run(options.resume_checkpoint, run_dir)) &&
                         run_dir_claim(run_dir, options.overwrite);
  if (!root) dist_barrier();
  TrainData data =
      train_data_for(config_in, resuming ? options.resume_tokenizer : init ? init->tokenizer_path : "", init);
  if (root) dist_barrier();
  const Config config = resolve_vocab(config_in, data.tokenizer);
  const ModelSpec spec = model_spec_make(config.model, config.attention);

  const TrainConfig& tc = config.train;
  // Random windows, streams (train.stateful) or rows of instruction examples; their validation.
  TrainBatches batches(data.tokens, config, dist_size(), data.tokenizer.eos_id());
  TrainSession session(config, spec);
  if (init) init_from_load(session, *init);
  if (batches.pairs()) {  // DPO's reference: the parent's log-probabilities, before any step
    if (resuming) init_from_load(session, dpo_parent(config, options.resume_checkpoint));  // the checkpoint loads after
    batches.prepare_reference(session);
  }
  std::optional<StreamCheckpoint> stream_checkpoint;
  if (batches.streams()) stream_checkpoint.emplace(session, *batches.streams());
  StreamCheckpoint* const stream_ck = stream_checkpoint ? &*stream_checkpoint : nullptr;
  log_info("train", "{} attention, L={} C={} H={} T={} V={}: {} parameters; batch {}x{}x{} = {} tokens/step, {} threads",
           enum_name(spec.attention.kind), spec.L, spec.C, spec.H, spec.model.context_length, spec.V,
           session.model().table.count(), tc.batch_size, tc.grad_accum, spec.model.context_length,
           int64_t(tc.batch_size) * tc.grad_accum * spec.model.context_length, thread_count());
  if (tc.precision == Precision::bf16)
    log_info("train", "train.precision bf16: matrix products on bf16 copies of the weights and their inputs; "
             "fp32 master weights, AdamW and evaluation (docs/bf16.md)");
  if (dist_size() > 1)
    log_info("train", "data parallel: {} ranks x batch {}x{}x{} = {} tokens/step; {}", dist_size(), tc.batch_size,
             tc.grad_accum, spec.model.context_length,
             int64_t(dist_size()) * tc.batch_size * tc.grad_accum * spec.model.context_length, dist_backend());
  log_info("train", "data: {} train / {} val tokens from {}; run dir {}", data.tokens.train().size(),
           data.tokens.val().size(), data.tokens.path(), run_dir);
  batches.log(session);

  TrainResult result;
  result.best_val_loss = std::numeric_limits<double>::infinity();
  TrainState state;
  state.seed = tc.seed;
  const std::string& tokenizer_bytes = data.tokenizer.model_bytes();
  state.tokenizer_xxh64 = hash_hex(xxhash64(tokenizer_bytes.data(), tokenizer_bytes.size()));
  state.threads = thread_count();
  if (init) {
    state.init_from = init->checkpoint_dir;
    state.init_from_step = init->step;
    state.init_from_xxh64 = init->model_xxh64;
  }
  int64_t start = 0, tokens_seen = 0;
  double wall_before = 0;  // training wall time of the run before this process
  if (resuming) {
    resume_global_batch_check(options.resume_checkpoint, tc.grad_accum);
    const TrainState saved = resume_load(session, options.resume_checkpoint, stream_ck);
    if (saved.tokenizer_xxh64 != state.tokenizer_xxh64)
      fail("checkpoint {} records tokenizer checksum {} but the run's tokenizer has {}",
           options.resume_checkpoint, saved.tokenizer_xxh64, state.tokenizer_xxh64);
    if (saved.step >= tc.steps)
      fail("checkpoint {} is at step {} and train.steps is {}: nothing to train; extend the run with "
           "--set train.steps=N (N > {})",
           options.resume_checkpoint, saved.step, tc.steps, saved.step);
    if (saved.threads != 0 && saved.threads != state.threads)
      log_warn("train", "checkpoint {} was trained with {} threads and this run has {}: it continues correctly but "
               "not bit-identically to an uninterrupted run (sums are split by thread); pass --threads {} for that",
               options.resume_checkpoint, saved.threads, state.threads, saved.threads);
    start = saved.step;
    if (options.stop_after > 0 && options.stop_after <= start)
      fail("--stop-after {} is not after the checkpoint's step {}; pass a later step", options.stop_after, start);
    tokens_seen = saved.tokens_seen;
    wall_before = saved.wall_seconds;
    result.best_val_loss = saved.best_val_loss;
    state.init_from = saved.init_from;  // a fine-tune's parent stays recorded
    state.init_from_step = saved.init_from_step;
    state.init_from_xxh64 = saved.init_from_xxh64;
  }
  state.ranks = dist_size();
  state.grad_accum = tc.grad_accum;
  if (replacing) run_dir_clear(run_dir);
  std::optional<MetricsFile> metrics;  // rank 0's
  if (root) {
    file_write_atomic(run_dir + "/config.yaml", config_dump(config));
    file_write_atomic(run_dir + "/tokenizer.model", tokenizer_bytes);
    if (resuming) metrics_keep_through(run_dir + "/metrics.jsonl", start);
    metrics.emplace(run_dir + "/metrics.jsonl", /*append=*/resuming);
  }
  if (resuming)
    log_info("train", "resuming from {} at step {}/{} ({} tokens seen)", options.resume_checkpoint, start,
             tc.steps, tokens_seen);
  // Every rank initialised (or loaded) the same weights: prove it before the first step.
  train_dist_weights_check(session.model().params(), session.model().param_size(), 0);
  if (init && root) {  // the parent's weights on this run's validation data: where fine-tuning starts
    const ValLoss before = batches.evaluate(session);
    metrics->write(eval_log_json(0, before.loss, wall_before + wall.seconds(), before.extra));
    std::string beside;
    for (const auto& [name, value] : before.extra) beside += fmt::format(", {} {:.4f}", name, value);
    log_info("train", "val loss at step 0 (the parent's weights, before fine-tuning): {:.4f}{}", before.loss, beside);
  }
  ProgressLine progress;
  StopSignals signals;
  if (const std::string note = signals.ignored_note(); !note.empty()) log_info("train", "{}", note);
  int64_t saved_step = resuming ? start : -1;  // the newest checkpoint on disk: its step and directory
  std::string saved_dir = options.resume_checkpoint;
  bool evaluated = false;  // by this process
  // Saves the state after `done` steps (val_loss < 0: none measured at this step).
  auto save = [&](int64_t done, double val_loss) {
    state.step = done;
    state.data_position = done;  // batches are keyed by (seed, step, micro): the step is the cursor
    state.tokens_seen = tokens_seen;
    state.wall_seconds = wall_before + wall.seconds();
    state.val_loss = val_loss >= 0 ? val_loss : std::numeric_limits<double>::quiet_NaN();
    state.best_val_loss = result.best_val_loss;
    progress.clear();
    // An update that overflowed (an absurd optim.lr) leaves inf weights after a finite loss: such
    // a checkpoint would become `latest`, prune good ones and only fail when loaded.
    std::vector<NamedRange> ranges;
    for (const ParamEntry& e : session.model().table.entries()) ranges.push_back({e.name, e.offset, e.numel});
    if (auto bad = grad_find_non_finite(session.model().params(), session.model().param_size(), ranges))
      fail("step {}: the update left weight {}[{}] = {}, so its checkpoint is not written ({}); lower optim.lr", done,
           bad->name, bad->index, bad->value,
           saved_dir.empty() ? std::string("no checkpoint of this run exists")
                             : fmt::format("the previous checkpoint {} is intact", saved_dir));
    try {
      saved_dir = save_checkpoint(session, config, run_dir, state, stream_ck);
    } catch (const Error& e) {  // a full disk, mostly: say what survives and how to go on
      fail("the checkpoint of step {} was not saved: {}. {}; make room (or fix the cause), then {}", done, e.what(),
           saved_dir.empty() ? std::string("No checkpoint of this run exists")
                             : fmt::format("The previous checkpoint {} is intact", saved_dir),
           saved_dir.empty() ? std::string("start the run again")
                             : fmt::format("continue with: rfa train --resume {}", run_dir));
    }
    saved_step = done;
    run_lock->keep();  // a checkpoint exists: the run directory is kept even if the run fails later
    log_info("train", "checkpoint {}", saved_dir);
    return saved_dir;
  };

  const int64_t tokens_at_start = tokens_seen;
  double interval_loss = 0, interval_seconds = 0, train_seconds = 0;
  int64_t interval_steps = 0, interval_tokens = 0;
  double recent_ms = 0;
  StepStats last;
  for (int64_t step = start; step < tc.steps; ++step) {
    Timer step_timer;
    last = batches.step(session, step);
    if (last.stopped) {  // a stop inside the step drops it whole; the last finished step is saved
      if (saved_step != step) {  // one rank (TrainSession::step): the gather is local
        if (stream_ck) stream_ck->gather(step);
        result.checkpoint_dir = save(step, -1);
      }
      log_warn("train", "signal {} received: stopped during step {}/{}, which is dropped, with checkpoint {} of "
               "step {}; continue with: rfa train --resume {}",
               stop_signal(), step + 1, tc.steps, saved_dir, step, run_dir);
      result.steps = step;
      result.interrupted = true;
      break;
    }
    train_dist_test_perturb(session.model().params(), step + 1);
    const double seconds = step_timer.seconds();
    train_seconds += seconds;
    interval_seconds += seconds;
    interval_loss += last.loss;
    interval_tokens += last.tokens;
    tokens_seen += last.tokens;
    ++interval_steps;
    const int64_t done = step + 1;
    const bool is_last = done == tc.steps;
    recent_ms = recent_ms == 0 ? seconds * 1e3 : 0.9 * recent_ms + 0.1 * seconds * 1e3;
    const double eta = (tc.steps - done) * recent_ms / 1e3;

    double val_loss = -1;
    std::vector<std::pair<const char*, double>> val_extra;
    const bool eval_due = (tc.eval_every > 0 && done % tc.eval_every == 0) || is_last || done == options.stop_after;
    if (root && eval_due && !stop_requested()) {
      progress.clear();
      const ValLoss v = batches.evaluate(session);  // NaN if a stop request cuts it short
      val_loss = v.loss;
      val_extra = v.extra;
    }
    // All ranks stop after the same step, whichever of them a signal reached and when (during
    // rank 0's evaluation too): the largest of their pending signals. One rank: its own.
    const int stop_sig = train_dist_stop_agree(stop_signal());
    const bool stopping = stop_sig != 0 || done == options.stop_after;
    if (stop_sig != 0) {
      val_loss = -1;  // the pass was cut short (or skipped): a signal stop records no val loss
    } else if (val_loss >= 0) {
      evaluated = true;
      result.final_val_loss = val_loss;
      result.best_val_loss = std::min(result.best_val_loss, val_loss);
      metrics->write(eval_log_json(done, val_loss, wall_before + wall.seconds(), val_extra));
    }
    if (done % tc.log_every == 0) train_dist_weights_check(session.model().params(), session.model().param_size(), done);
    if (done % tc.log_every == 0 || step == start || is_last || stopping || val_loss >= 0) {
      TrainLogLine line;
      line.step = done;
      line.total = tc.steps;
      line.loss = interval_loss / interval_steps;
      line.val_loss = val_loss;
      line.lr = last.lr;
      line.grad_norm = last.grad_norm;
      line.tokens_per_s = interval_tokens / interval_seconds;
      line.ms_per_step = interval_seconds * 1e3 / interval_steps;
      line.eta_s = eta;
      line.elapsed_s = wall_before + wall.seconds();
      progress.clear();
      log_info("train", "{}", train_log_text(line));
      if (root) metrics->write(train_log_json(line));
      result.final_train_loss = line.loss;
      interval_loss = interval_seconds = 0;
      interval_steps = interval_tokens = 0;
    } else {
      progress.show(fmt::format("[train] step {}/{} | loss {:.4f} | {:.1f} ms/step | eta {}", done, tc.steps,
                                last.loss, seconds * 1e3, duration_text(eta)));
    }
    const bool periodic = config.checkpoint.every > 0 && done % config.checkpoint.every == 0;
    if (periodic || is_last || stopping) {
      if (stream_ck) stream_ck->gather(done);  // collective: every rank, before rank 0 writes
      if (root) result.checkpoint_dir = save(done, val_loss);
    }
    result.steps = done;
    if (stopping) {
      const std::string why = stop_sig != 0 ? fmt::format("signal {} received", stop_sig)
                                            : fmt::format("--stop-after {}", options.stop_after);
      log_warn("train", "{}: stopped after step {}/{} with checkpoint {}; continue with: rfa train --resume {}", why,
               done, tc.steps, result.checkpoint_dir, run_dir);
      result.interrupted = true;
      break;
    }
  }
  progress.clear();
  result.train_seconds = train_seconds;
  result.wall_seconds = wall.seconds();
  // This process's rate: a resumed run's tokens_seen counts the earlier processes' tokens too.
  result.tokens_per_s = train_seconds > 0 ? (tokens_seen - tokens_at_start) / train_seconds : 0;
  const std::string val_summary = evaluated ? fmt::format("final val loss {:.4f} (best {:.4f})", result.final_val_loss,
                                                      result.best_val_loss)
                                        : std::string("no val loss measured");  // a signal stop skips it
  log_info("train", "done: {} steps, {}, {} in steps ({} wall), {:.0f} tok/s", result.steps, val_summary,
           duration_text(result.train_seconds), duration_text(result.wall_seconds), result.tokens_per_s);
  log_info("train", "loss curves: scripts/plot-runs.py {} -o {}/loss.png", run_dir, run_dir);
  return result;
}

}  // namespace

TrainResult train_run(const Config& config, const TrainOptions& options) {
  if (!options.resume_checkpoint.empty() || config.train.init_from.empty())
    return train_run_with(config, options, nullptr);  // a resumed fine-tune loads its own checkpoint
  const InitPoint init = init_from_prepare(config, options.config_origins);  // reads only: refuses before any write
  return train_run_with(init.config, options, &init);
}

}  // namespace rfa
