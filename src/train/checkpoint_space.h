#pragma once
// Room for the checkpoints a run keeps at once, said at its start. The run writes checkpoint.keep_last
// of them, the best by validation loss besides, and the next one beside those before the oldest go: a
// file system without room for that many stops the run at the first checkpoint that does not fit
// (the previous one stays intact, the steps since it are lost). A warning, not a refusal: space can
// be freed while the run trains, and a file system full at the start is refused already (a run
// directory that accepts no file: train/run_dir_lock.cpp).
#include <cstdint>
#include <string>

#include "config/config.h"

namespace rfa {

struct CheckpointSpace {
  double each = 0;      // bytes of one checkpoint: weights, AdamW's m and v, the tokenizer, the rest
  int slots = 0;        // checkpoints on disk at once at most
  double existing = 0;  // bytes of the checkpoints already there (a resumed run's), replaced as it goes
  double free = -1;     // bytes the file system gives this user; -1 unknown
  double needed() const;  // more than is there now
  bool short_of_room() const { return free >= 0 && needed() > free; }
};

CheckpointSpace checkpoint_space(int64_t params, int64_t tokenizer_bytes, const CheckpointConfig& c,
                                 double existing, double free);
// checkpoint_space for the run directory (its checkpoints/ and its file system), and a warning when
// short of room, naming what is needed, what is free and the keys that need less.
void checkpoint_space_warn(const std::string& run_dir, int64_t params, int64_t tokenizer_bytes,
                           const CheckpointConfig& c);

}  // namespace rfa
