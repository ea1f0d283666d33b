#pragma once
// Atomic checkpoint directories under a root (e.g. <run>/checkpoints):
//   root/step-000500/      one checkpoint (files listed in checkpoint.h)
//   root/latest            text file "step-000500\n", replaced atomically by rename
//   root/step-000500.tmp-<pid>   a write in progress (or a crashed one)
// A write goes to the temp dir, every file and the dir are fsynced, the dir is renamed
// into place, the root fsynced, then `latest` is replaced. A crash at any instant leaves
// the previous `latest` pointing at a complete checkpoint.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rfa {

std::string checkpoint_name(int64_t step);  // "step-000500" (at least 6 digits)
int64_t checkpoint_name_step(const std::string& name);  // "step-000500" -> 500; -1 if not such a name

// Creates root if needed, runs fill(temp_dir) to write the files (fill should fsync
// what it writes; FileWriter/safetensors_write do), fsyncs the temp dir, renames it to
// root/name (replacing an existing checkpoint of that name) and points `latest` at it.
// On any failure removes the temp dir, leaves `latest` untouched and rethrows an
// rfa::Error carrying the path and reason. Returns the final directory path.
std::string checkpoint_dir_commit(const std::string& root, const std::string& name,
                                  const std::function<void(const std::string& temp_dir)>& fill);

// The directory `latest` points at, or "" if there is no `latest` file. Throws if the
// pointer is malformed or names a missing directory.
std::string checkpoint_latest(const std::string& root);

struct CheckpointEntry {
  std::string name;  // "step-000500"
  int64_t step = 0;
  double val_loss = 0;  // NaN if not evaluated or unreadable
};

// Complete checkpoints under root, sorted by step (temp dirs excluded).
std::vector<CheckpointEntry> checkpoint_list(const std::string& root);

// Keeps the last keep_last checkpoints, plus the one with the lowest finite val_loss if
// keep_best, plus whatever `latest` names; removes the rest and stale temp dirs of dead
// writers. Returns the names removed.
std::vector<std::string> checkpoint_prune(const std::string& root, int keep_last, bool keep_best);

}  // namespace rfa
