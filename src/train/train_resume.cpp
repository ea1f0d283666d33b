#include "train/train_resume.h"

#include <array>
#include <filesystem>
#include <sstream>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_tokenizer.h"
#include "io/file_io.h"
#include "io/json.h"
#include "io/hash.h"
#include "config/config_enums.h"
#include "config/config_keys.h"
#include "config/config_load.h"
#include "core/error.h"
#include "core/log.h"
#include "io/file_util.h"
#include "model/model_io.h"
#include "model/model_load.h"
#include "train/train_session.h"
#include "train/train_streams.h"

namespace rfa {
namespace {

namespace fs = std::filesystem;

// train.grad_accum may change only with the number of ranks, keeping the global batch
// ranks x grad_accum (train_start_resumed checks it: train_dist.h, train_dist_resume_check).
// train.precision may change: checkpoints hold the fp32 master weights either way; so may
// train.thread_split, as --threads may (each only changes how the sums are ordered).
constexpr std::array<std::string_view, 14> kChangeable = {
    "train.steps",      "train.log_every",      "train.eval_every",     "train.eval_batches",
    "train.run_dir",    "checkpoint.every",     "checkpoint.keep_last", "checkpoint.keep_best",
    "data.corpus",      "data.tokens",          "tokenizer.path",       "train.grad_accum",
    "train.precision",  "train.thread_split"};

// The run a checkpoint belongs to: RUN/checkpoints/step-N -> RUN; "" if it is not inside one.
// Relative paths stay relative unless they are too short to name the run (e.g. "step-000500").
std::string run_dir_of(const std::string& checkpoint_dir) {
  const fs::path absolute = fs::absolute(checkpoint_dir).lexically_normal();
  if (absolute.parent_path().filename() != "checkpoints") return "";
  const fs::path relative = fs::path(checkpoint_dir).lexically_normal().parent_path().parent_path();
  return relative.empty() ? absolute.parent_path().parent_path().string() : relative.string();
}

}  // namespace

bool resume_key_changeable(std::string_view key) {
  for (std::string_view k : kChangeable)
    if (k == key) return true;
  return false;
}

namespace {

ResumePoint resume_prepare_from(const std::string& dir, const std::vector<std::string>& sets) {
  ResumePoint out;
  out.checkpoint_dir = dir;
  const std::string config_path = dir + "/config.yaml", state_path = dir + "/state.json";
  const Config saved =
      checkpoint_file_read(dir, [&] { return config_parse(file_read_text(config_path), config_path); });
  Config config = saved;
  if (std::string run = run_dir_of(dir); !run.empty()) config.train.run_dir = run;
  const Config before_sets = config;
  for (const std::string& s : sets) config_apply_set(s, config);
  for (const ConfigKey& key : config_keys()) {
    const std::string was = config_key_get(key, before_sets), now = config_key_get(key, config);
    if (was == now || resume_key_changeable(key.path)) continue;
    fail("--resume: {} is '{}' in checkpoint {} and --set makes it '{}'; a resumed run keeps the saved config. "
         "Only train.steps, train.log_every, train.eval_every, train.eval_batches, train.run_dir, train.precision, "
         "checkpoint.*, data.corpus, data.tokens, tokenizer.path (and train.grad_accum with the number of MPI ranks, keeping "
         "ranks x grad_accum) may change; start a new run to change {}",
         key.path, was, dir, now, key.path);
  }
  config_validate(config);
  if (config.train.precision != saved.train.precision)
    log_info("resume", "train.precision switches from {} (checkpoint {}) to {}: the fp32 master weights and AdamW "
             "moments carry over; the products change precision from here on",
             enum_name(saved.train.precision), dir, enum_name(config.train.precision));
  const TrainState state =
      checkpoint_file_read(dir, [&] { return train_state_parse(file_read_text(state_path), state_path); });
  out.tokenizer_path = checkpoint_tokenizer_path(dir, state, config_tokenizer_path(config));
  out.config = config;
  return out;
}

}  // namespace

ResumePoint resume_prepare(const std::string& path, const std::vector<std::string>& sets) {
  // A run still training (its lock refuses us later, naming the pid) may prune what we read here.
  return checkpoint_read_retrying(path, [&](const std::string& dir) { return resume_prepare_from(dir, sets); });
}

TrainState resume_load(TrainSession& session, const std::string& dir, StreamCheckpoint* streams) {
  Model<float>& model = session.model();
  LoadedCheckpoint ck = checkpoint_load(dir, model_tensor_specs(model.spec), optimizer_tensor_specs(model.spec),
                                        streams ? streams->specs() : std::vector<TensorSpec>{});
  const uint64_t seed = session.config().train.seed;
  if (ck.state.seed != seed)
    fail("checkpoint {} was trained with seed {} but the config says train.seed {}; resume with the saved config",
         dir, ck.state.seed, seed);
  model_tensors_load(model, ck);
  optimizer_tensors_load(model, ck, session.adam_m(), session.adam_v());
  if (streams) streams->load(ck.streams, ck.state.step, dir + "/stream.safetensors");
  session.set_steps_taken(ck.state.step);
  return ck.state;
}

bool checkpoint_in_run(const std::string& checkpoint_dir, const std::string& run_dir) {
  std::error_code ec;
  return fs::weakly_canonical(checkpoint_dir, ec).parent_path() ==
         fs::weakly_canonical(fs::path(run_dir) / "checkpoints", ec);
}

void metrics_keep_through(const std::string& path, int64_t step) {
  if (!fs::exists(path)) return;
  std::istringstream in(file_read_all(path));
  std::string kept, line;
  while (std::getline(in, line)) {
    try {
      const JsonValue v = json_parse(line, path);
      const JsonValue* s = v.find("step");
      if (s && s->as_int64("step") <= step) kept += line + "\n";
    } catch (const Error&) {
      // A line cut short by a kill: drop it.
    }
  }
  file_write_atomic(path, kept);
}

}  // namespace rfa
