#pragma once
// A trainer's hold on its run directory (train.run_dir), taken before anything
// else and kept for the whole run:
//  - creates the directory if it is missing, remembering each level it created;
//  - takes an exclusive flock(2) on RUN/.lock and writes its pid into it. A second
//    trainer (`rfa train` or `rfa train --resume`) on the same directory is refused
//    naming that pid. The kernel drops the lock when the process ends, however it
//    ends, so a .lock file left behind never blocks a later run;
//  - probes that RUN and RUN/checkpoints (if present) accept new files, so a
//    permission problem stops the run before any work rather than at the first save.
// A run that fails before its first checkpoint (keep() never called) leaves no
// half-started run directory behind: the destructor removes the trainer files (train_run.h lists them)
// that did not exist when the lock was taken, then the directories it created,
// each only if empty. A directory it did not create is never removed, and neither
// is a file that was there before (an earlier run's log, a user's data).
//
// Readers (`rfa eval`, `rfa generate`) take no lock: they may read a run while
// it trains (checkpoints appear and are pruned atomically, checkpoint_dir.h).
#include <string>
#include <vector>

namespace rfa {

class RunDirLock {
 public:
  // Throws Error naming the directory, the holder's pid or the failing probe, with the fix.
  explicit RunDirLock(const std::string& dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  // The run has written something worth keeping (a checkpoint): the directory stays.
  void keep() { keep_ = true; }
  bool created() const { return !created_.empty(); }  // this run made the directory

 private:
  void remove_started_files() noexcept;

  std::string dir_;
  std::vector<std::string> created_;    // directories this run created, deepest first
  std::vector<std::string> new_files_;  // entries of dir_ this run created (.lock first)
  int fd_ = -1;                       // RUN/.lock, flocked
  bool keep_ = false;
};

}  // namespace rfa
