#pragma once
// The run directory's owner (train.run_dir). Data parallel (docs/distributed.md), rank 0 alone
// owns the directory: it holds the lock (train/run_dir_lock.h) and writes train.log,
// config.yaml, tokenizer.model, metrics.jsonl and the checkpoints; the other ranks only compute
// and take part in the collectives. This type is that rule: only the root rank can build one
// (run_dir_owner_on_root), and every write to the directory goes through it, so a rank that
// holds none has no way to write there.
//
// Built before anything else is read, it also decides whether the run may replace what the
// directory holds: an earlier run's checkpoints only with --overwrite, files that no rfa run
// wrote (a user's config.yaml beside train.run_dir=.) only with --overwrite. The deletion
// itself waits for replace_earlier_run(), which the run calls once it has validated and
// allocated everything.
#include <cstdint>
#include <optional>
#include <string>

#include "config/config.h"
#include "train/run_dir_lock.h"
#include "train/train_report.h"

namespace rfa {

struct TrainOptions;

class RunDirOwner {
 public:
  // Asserts that this is the root rank. Takes the lock (a second trainer is refused naming its
  // pid), adds train.log to the log, and refuses, naming the files and the fix, a directory
  // holding a run or foreign files that `options` (--overwrite, a resume into its own run)
  // do not allow replacing.
  RunDirOwner(const std::string& run_dir, const TrainOptions& options);
  RunDirOwner(const RunDirOwner&) = delete;
  RunDirOwner& operator=(const RunDirOwner&) = delete;

  // --overwrite: deletes the earlier run's checkpoints, if the directory held a run. The run
  // calls it after the last thing that can refuse it.
  void replace_earlier_run();
  // config.yaml and tokenizer.model, written whole; metrics.jsonl opened: truncated by a new
  // run, kept through step `start` and appended to by a resumed one.
  void write_run_files(const Config& config, const std::string& tokenizer_bytes, bool resuming, int64_t start);
  MetricsFile& metrics();  // after write_run_files
  // A checkpoint is on disk: the directory stays, even if the run fails later.
  void checkpoint_written() { lock_.keep(); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  RunDirLock lock_;
  bool replacing_ = false;  // holds an earlier run that --overwrite replaces
  std::optional<MetricsFile> metrics_;
};

// The owner on the root rank; nullopt on every other rank.
std::optional<RunDirOwner> run_dir_owner_on_root(const std::string& run_dir, const TrainOptions& options);

}  // namespace rfa
