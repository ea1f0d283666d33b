#include "train/run_dir_owner.h"

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include <fmt/ranges.h>

#include "checkpoint/checkpoint_dir.h"
#include "config/config_load.h"
#include "core/error.h"
#include "core/log.h"
#include "dist/dist.h"
#include "io/file_util.h"
#include "train/train_resume.h"
#include "train/train_run.h"

namespace rfa {
namespace {

const std::string& root_only(const std::string& run_dir) {
  RFA_ASSERT(dist_is_root(), "rank {} would own train.run_dir '{}': only rank 0 locks and writes it", dist_rank(),
             run_dir);
  return run_dir;
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
// true if the directory holds a run that --overwrite allows replacing; replace_earlier_run
// deletes it only once the new run has validated and allocated everything.
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

}  // namespace

RunDirOwner::RunDirOwner(const std::string& run_dir, const TrainOptions& options)
    : dir_(root_only(run_dir)), lock_(run_dir) {
  log_add_file(dir_ + "/train.log");
  // A resume continuing its own run replaces nothing; a new run, or a resume forking into
  // another directory, must find no other run there.
  const bool continuing = !options.resume_checkpoint.empty() && checkpoint_in_run(options.resume_checkpoint, dir_);
  replacing_ = !continuing && run_dir_claim(dir_, options.overwrite);
}

void RunDirOwner::replace_earlier_run() {
  if (!replacing_) return;
  const std::string checkpoints = dir_ + "/checkpoints";
  log_warn("train", "--overwrite: deleting the earlier run's checkpoints in {}", checkpoints);
  std::error_code ec;
  std::filesystem::remove_all(checkpoints, ec);
  if (ec) fail("--overwrite: cannot delete the earlier run's checkpoints in {}: {}", checkpoints, ec.message());
}

void RunDirOwner::write_run_files(const Config& config, const std::string& tokenizer_bytes, bool resuming,
                                  int64_t start) {
  file_write_atomic(dir_ + "/config.yaml", config_dump(config));
  file_write_atomic(dir_ + "/tokenizer.model", tokenizer_bytes);
  if (resuming) metrics_keep_through(dir_ + "/metrics.jsonl", start);
  metrics_.emplace(dir_ + "/metrics.jsonl", /*append=*/resuming);
}

MetricsFile& RunDirOwner::metrics() {
  RFA_ASSERT(metrics_, "metrics.jsonl is opened by write_run_files");
  return *metrics_;
}

std::optional<RunDirOwner> run_dir_owner_on_root(const std::string& run_dir, const TrainOptions& options) {
  if (!dist_is_root()) return std::nullopt;
  return std::optional<RunDirOwner>(std::in_place, run_dir, options);
}

}  // namespace rfa
