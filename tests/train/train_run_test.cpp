// The training entry point in process (train/train_run.h): a tiny model on a tiny corpus in a
// temporary directory, driven as `rfa train` drives it. Steps run, metrics.jsonl gets a line at
// the log and evaluation cadence, checkpoints come at checkpoint.every and at the end, a stop
// (--stop-after, a signal) saves a checkpoint and returns, and a resume continues from it
// (after --stop-after, to the very weights of a run that never stopped). The fresh-process
// versions are tests/e2e/resume.sh and tests/e2e/signals.sh.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_dir.h"
#include "checkpoint/train_state.h"
#include "core/log.h"
#include "io/file_util.h"
#include "io/json.h"
#include "support/temp_dir.h"
#include "support/text_run.h"
#include "train/train_resume.h"
#include "train/train_run.h"

using namespace rfa;

namespace {

namespace fs = std::filesystem;

// text_run_config's tiny model; 8 steps of 2 x 16 tokens.
Config run_config(const test::TempDir& dir, const std::string& run) {
  Config c = test::text_run_config(dir, run);
  c.train.batch_size = 2;
  c.train.steps = 8;
  c.train.log_every = 2;
  c.train.eval_every = 3;
  c.train.eval_batches = 2;
  c.train.seed = 5;
  c.optim.warmup_steps = 2;
  c.checkpoint.every = 3;
  c.checkpoint.keep_last = 10;
  return c;
}

struct MetricsLine {
  std::string type;  // "train" or "eval"
  int64_t step = 0;
  double loss = 0;   // train: the loss; eval: val_loss
};

std::vector<MetricsLine> metrics_of(const std::string& run_dir) {
  std::vector<MetricsLine> out;
  std::istringstream in(file_read_all(run_dir + "/metrics.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const JsonValue v = json_parse(line, "metrics.jsonl");
    const std::string type = v.find("type")->as_string("type");
    out.push_back({type, v.find("step")->as_int64("step"),
                   v.find(type == "train" ? "loss" : "val_loss")->as_double("loss")});
  }
  return out;
}

std::vector<int64_t> steps_of(const std::vector<MetricsLine>& lines, const std::string& type) {
  std::vector<int64_t> steps;
  for (const MetricsLine& l : lines)
    if (l.type == type) steps.push_back(l.step);
  return steps;
}

std::set<std::string> checkpoints_of(const std::string& run_dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(run_dir + "/checkpoints"))
    if (e.is_directory()) names.insert(e.path().filename().string());
  return names;
}

TrainState state_of(const std::string& checkpoint_dir) {
  const std::string path = checkpoint_dir + "/state.json";
  return train_state_parse(file_read_all(path), path);
}

// `rfa train --resume RUN [--set ...]` (cli/train_command.cpp).
TrainResult resume(const std::string& run_dir, const std::vector<std::string>& sets = {}) {
  const ResumePoint point = resume_prepare(run_dir, sets);
  TrainOptions options;
  options.resume_checkpoint = point.checkpoint_dir;
  options.resume_tokenizer = point.tokenizer_path;
  return train_run(point.config, options);
}

extern "C" void ignore_signal(int) {}

}  // namespace

TEST_CASE("train run: steps, metrics at the log and eval cadence, checkpoints at checkpoint.every and the end") {
  test::TempDir dir;
  const Config c = run_config(dir, "run");
  const TrainResult r = train_run(c);
  CHECK(r.steps == 8);
  CHECK_FALSE(r.interrupted);
  CHECK(r.checkpoint_dir == c.train.run_dir + "/checkpoints/step-000008");
  const std::vector<MetricsLine> lines = metrics_of(c.train.run_dir);
  // Logged: the first step, every log_every (2), an evaluated step (3), the last.
  CHECK(steps_of(lines, "train") == std::vector<int64_t>{1, 2, 3, 4, 6, 8});
  CHECK(steps_of(lines, "eval") == std::vector<int64_t>{3, 6, 8});  // every eval_every (3) and the last
  CHECK(lines.back().type == "train");
  CHECK(r.final_train_loss == lines.back().loss);
  CHECK(checkpoints_of(c.train.run_dir) == std::set<std::string>{"step-000003", "step-000006", "step-000008"});
  CHECK(checkpoint_latest(c.train.run_dir + "/checkpoints") == r.checkpoint_dir);
  const TrainState state = state_of(r.checkpoint_dir);
  CHECK(state.step == 8);
  CHECK(state.val_loss == r.final_val_loss);
  CHECK(state.tokens_seen == 8 * 2 * 16);
  for (const char* file : {"config.yaml", "tokenizer.model", "train.log", ".lock"}) {
    CAPTURE(file);
    CHECK(fs::exists(c.train.run_dir + "/" + file));
  }
  log_flush();
  CHECK(file_read_all(c.train.run_dir + "/train.log").find("[train] done: 8 steps") != std::string::npos);
}

TEST_CASE("train run: --stop-after saves and returns; the resume ends at the weights of a run never stopped") {
  test::TempDir dir;
  const Config straight = run_config(dir, "straight");
  train_run(straight);

  const Config c = run_config(dir, "stopped");
  TrainOptions options;
  options.stop_after = 5;
  const TrainResult stopped = train_run(c, options);
  CHECK(stopped.interrupted);
  CHECK(stopped.steps == 5);
  CHECK(stopped.checkpoint_dir == c.train.run_dir + "/checkpoints/step-000005");
  CHECK(state_of(stopped.checkpoint_dir).step == 5);
  const std::vector<MetricsLine> before = metrics_of(c.train.run_dir);
  CHECK(steps_of(before, "train") == std::vector<int64_t>{1, 2, 3, 4, 5});
  CHECK(steps_of(before, "eval") == std::vector<int64_t>{3, 5});  // --stop-after evaluates before it saves

  const TrainResult resumed = resume(c.train.run_dir);
  CHECK_FALSE(resumed.interrupted);
  CHECK(resumed.steps == 8);
  CHECK(state_of(resumed.checkpoint_dir).step == 8);
  // The resumed run logs its first step (6), then the cadence; every loss is the straight run's.
  const std::vector<MetricsLine> lines = metrics_of(c.train.run_dir);
  CHECK(steps_of(lines, "train") == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 8});
  CHECK(steps_of(lines, "eval") == std::vector<int64_t>{3, 5, 6, 8});
  // The straight run logs no step 5, and its step-6 line averages steps 5 and 6.
  std::map<std::pair<std::string, int64_t>, double> want;
  for (const MetricsLine& w : metrics_of(straight.train.run_dir)) want[{w.type, w.step}] = w.loss;
  for (const MetricsLine& l : lines) {
    if (l.step == 5 || (l.type == "train" && l.step == 6)) continue;
    CAPTURE(l.type);
    CAPTURE(l.step);
    CHECK(l.loss == want.at({l.type, l.step}));
  }
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    CAPTURE(file);
    CHECK(file_read_all(resumed.checkpoint_dir + "/" + file) ==
          file_read_all(straight.train.run_dir + "/checkpoints/step-000008/" + file));
  }
}

TEST_CASE("train run: a stop signal saves the last finished step with no val loss; the resume continues it") {
  test::TempDir dir;
  Config c = run_config(dir, "run");
  c.train.steps = 1000000;  // far more than run before the signal lands
  c.train.log_every = 1;
  c.train.eval_every = 0;
  c.checkpoint.every = 0;
  // A signal that came after the run would meet this handler, not the default action (exit).
  struct sigaction quiet {}, before {};
  quiet.sa_handler = ignore_signal;
  sigemptyset(&quiet.sa_mask);
  REQUIRE(sigaction(SIGTERM, &quiet, &before) == 0);
  const std::string metrics = c.train.run_dir + "/metrics.jsonl";
  std::thread sender([&] {  // SIGTERM once the first step is logged: the run's stop handler is in place by then
    for (int i = 0; i < 60000; ++i) {
      std::error_code ec;
      if (fs::file_size(metrics, ec) > 0 && !ec) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    kill(getpid(), SIGTERM);
  });
  const TrainResult stopped = train_run(c);
  sender.join();
  sigaction(SIGTERM, &before, nullptr);
  REQUIRE(stopped.interrupted);
  const int64_t s = stopped.steps;
  REQUIRE(s >= 1);
  REQUIRE(s < c.train.steps);
  const std::string latest = checkpoint_latest(c.train.run_dir + "/checkpoints");
  CHECK(latest == fmt::format("{}/checkpoints/step-{:06}", c.train.run_dir, s));
  const TrainState state = state_of(latest);
  CHECK(state.step == s);
  CHECK(std::isnan(state.val_loss));  // a signal stop records no val loss
  std::vector<MetricsLine> lines = metrics_of(c.train.run_dir);
  CHECK(steps_of(lines, "eval").empty());
  CHECK(lines.back().step == s);

  const TrainResult resumed = resume(c.train.run_dir, {fmt::format("train.steps={}", s + 2)});
  CHECK_FALSE(resumed.interrupted);
  CHECK(resumed.steps == s + 2);
  CHECK(resumed.checkpoint_dir == fmt::format("{}/checkpoints/step-{:06}", c.train.run_dir, s + 2));
  lines = metrics_of(c.train.run_dir);
  std::vector<int64_t> want;
  for (int64_t i = 1; i <= s + 2; ++i) want.push_back(i);
  CHECK(steps_of(lines, "train") == want);
  CHECK(steps_of(lines, "eval") == std::vector<int64_t>{s + 2});  // the last step evaluates
}
