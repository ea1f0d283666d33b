#include "train/train_loop.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/stop_signals.h"
#include "dist/dist.h"
#include "train/train_cadence.h"
#include "train/train_checkpoints.h"
#include "train/train_dist.h"
#include "train/train_report.h"
#include "train/train_setup.h"

namespace rfa {
namespace {

// The steps since the last log line, which its loss, tokens/s and ms/step average over.
struct LogInterval {
  double loss = 0, seconds = 0;
  int64_t steps = 0, tokens = 0;
};

std::string extra_text(const std::vector<std::pair<const char*, double>>& extra) {
  std::string text;
  for (const auto& [name, value] : extra) text += fmt::format(", {} {:.4f}", name, value);
  return text;
}

void log_done(const TrainResult& result, bool evaluated, const std::string& run_dir) {
  const std::string val_summary = evaluated ? fmt::format("final val loss {:.4f} (best {:.4f})", result.final_val_loss,
                                                          result.best_val_loss)
                                            : std::string("no val loss measured");  // a signal stop skips it
  log_info("train", "done: {} steps, {}, {} in steps ({} wall), {:.0f} tok/s", result.steps, val_summary,
           duration_text(result.train_seconds), duration_text(result.wall_seconds), result.tokens_per_s);
  log_info("train", "loss curves: scripts/plot-runs.py {} -o {}/loss.png", run_dir, run_dir);
}

}  // namespace

TrainResult train_loop(TrainSetup& setup, const TrainOptions& options, const Timer& wall) {
  const TrainConfig& tc = setup.config().train;
  const TrainStart& start = setup.start();
  TrainSession& session = setup.session();
  TrainBatches& batches = setup.batches();
  // Rank 0's: it alone evaluates and writes metrics.jsonl. Null on the other ranks, which wait
  // for its evaluation in their next collective.
  RunDirOwner* const owner = setup.owner();
  auto elapsed = [&] { return start.wall_before + wall.seconds(); };
  if (setup.fine_tune() && owner) {  // the parent's weights on this run's validation data: where fine-tuning starts
    const ValLoss before = batches.evaluate(session);
    owner->metrics().write(eval_log_json(0, before.loss, elapsed(), before.extra));
    log_info("train", "val loss at step 0 (the parent's weights, before fine-tuning): {:.4f}{}", before.loss,
             extra_text(before.extra));
  }
  ProgressLine progress;
  StopSignals signals;
  if (const std::string note = signals.ignored_note(); !note.empty()) log_info("train", "{}", note);
  TrainCheckpoints checkpoints(setup, options.resume_checkpoint, progress);
  const TrainCadence cadence{setup.config(), start.step + 1, options.stop_after};

  TrainResult result;
  result.best_val_loss = start.best_val_loss;
  int64_t tokens_seen = start.tokens_seen;
  auto totals = [&] { return CheckpointTotals{tokens_seen, elapsed(), result.best_val_loss}; };
  bool evaluated = false;  // by this process
  LogInterval interval;
  double train_seconds = 0, recent_ms = 0;
  for (int64_t step = start.step; step < tc.steps; ++step) {
    Timer step_timer;
    const StepStats last = batches.step(session, step);
    if (last.stopped) {  // a stop inside the step drops it whole; the last finished step is saved
      RFA_ASSERT(dist_size() == 1, "only a lone rank drops a step at a stop request (TrainSession::step)");
      if (!checkpoints.on_disk(step)) result.checkpoint_dir = checkpoints.save(step, -1, totals());
      log_warn("train", "signal {} received: stopped during step {}/{}, which is dropped, with checkpoint {} of "
               "step {}; continue with: rfa train --resume {}",
               stop_signal(), step + 1, tc.steps, checkpoints.newest(), step, tc.run_dir);
      result.steps = step;
      result.interrupted = true;
      break;
    }
    train_dist_test_perturb(session.model().params(), step + 1);
    const double seconds = step_timer.seconds();
    train_seconds += seconds;
    interval.seconds += seconds;
    interval.loss += last.loss;
    interval.tokens += last.tokens;
    tokens_seen += last.tokens;
    ++interval.steps;
    const int64_t done = step + 1;
    recent_ms = recent_ms == 0 ? seconds * 1e3 : 0.9 * recent_ms + 0.1 * seconds * 1e3;
    const double eta = (tc.steps - done) * recent_ms / 1e3;

    double val_loss = -1;
    std::vector<std::pair<const char*, double>> val_extra;
    if (owner && cadence.eval_due(done) && !stop_requested()) {
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
    } else if (val_loss >= 0) {  // measured, so by the owner
      evaluated = true;
      result.final_val_loss = val_loss;
      result.best_val_loss = std::min(result.best_val_loss, val_loss);
      owner->metrics().write(eval_log_json(done, val_loss, elapsed(), val_extra));
    }
    if (cadence.weights_check_due(done))
      train_dist_weights_check(session.model().params(), session.model().param_size(), done);
    if (cadence.log_due(done, stopping, val_loss >= 0)) {
      TrainLogLine line;
      line.step = done;
      line.total = tc.steps;
      line.loss = interval.loss / interval.steps;
      line.val_loss = val_loss;
      line.lr = last.lr;
      line.grad_norm = last.grad_norm;
      line.tokens_per_s = interval.tokens / interval.seconds;
      line.ms_per_step = interval.seconds * 1e3 / interval.steps;
      line.eta_s = eta;
      line.elapsed_s = elapsed();
      progress.clear();
      log_info("train", "{}", train_log_text(line));
      if (owner) owner->metrics().write(train_log_json(line));
      result.final_train_loss = line.loss;
      interval = {};
    } else {
      progress.show(fmt::format("[train] step {}/{} | loss {:.4f} | {:.1f} ms/step | eta {}", done, tc.steps,
                                last.loss, seconds * 1e3, duration_text(eta)));
    }
    if (cadence.checkpoint_due(done, stopping)) result.checkpoint_dir = checkpoints.save(done, val_loss, totals());
    result.steps = done;
    if (stopping) {
      const std::string why = stop_sig != 0 ? fmt::format("signal {} received", stop_sig)
                                            : fmt::format("--stop-after {}", options.stop_after);
      log_warn("train", "{}: stopped after step {}/{} with checkpoint {}; continue with: rfa train --resume {}", why,
               done, tc.steps, result.checkpoint_dir, tc.run_dir);
      result.interrupted = true;
      break;
    }
  }
  progress.clear();
  result.train_seconds = train_seconds;
  result.wall_seconds = wall.seconds();
  // This process's rate: a resumed run's tokens_seen counts the earlier processes' tokens too.
  result.tokens_per_s = train_seconds > 0 ? (tokens_seen - start.tokens_seen) / train_seconds : 0;
  log_done(result, evaluated, tc.run_dir);
  return result;
}

}  // namespace rfa
