#pragma once
// state.json: where a run stands, saved in every checkpoint so training can resume.
// The random streams are counter-based (core/rng.h), so seed + step determine them:
// there is no generator state to save.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace rfa {

// Bumped whenever the checkpoint layout changes. Version 2 added state.json's
// "checksum" and the safetensors files' "rfa.step" metadata; version 1 files (without
// them) still load.
constexpr int kCheckpointFormatVersion = 2;
constexpr int kCheckpointFormatOldest = 1;  // the oldest version this binary reads

struct TrainState {
  int format_version = kCheckpointFormatVersion;
  int64_t step = 0;                 // optimizer steps completed
  uint64_t seed = 0;                // train.seed of the run
  int64_t data_position = 0;        // data loader cursor (tokens or batches; loader defines)
  int64_t tokens_seen = 0;
  double wall_seconds = 0;          // training wall time so far
  double val_loss = std::numeric_limits<double>::quiet_NaN();  // at this step; NaN = not evaluated
  double best_val_loss = std::numeric_limits<double>::infinity();
  std::string tokenizer_xxh64;  // tokenizer_xxh64() of the tokenizer model (io/hash.h); state.json key "tokenizer_checksum"
  // Worker threads of the run that wrote it (0 = not recorded: optional in the file). Float
  // sums are ordered by thread, so a resume is bit-identical only at the same count.
  int threads = 0;
  // Data parallel (dist/dist.h): the ranks and train.grad_accum of the run that wrote it; their
  // product is the global batch in micro-batches, which a resume must keep. 0 = not recorded:
  // files written before data parallelism (one rank). Written only when recorded, so the
  // checksum of older files still matches.
  int ranks = 0;
  int grad_accum = 0;
  // XXH64 of the checkpoint's config.yaml (key "config_checksum"; "" = not recorded, written
  // only when set): the saved config a resume trains with is otherwise unchecked text.
  std::string config_xxh64;
  // A fine-tune (train.init_from, train/train_init.h): the parent checkpoint it started from,
  // its step and the XXH64 of its model.safetensors (keys "init_from", "init_from_step",
  // "init_from_checksum"; written only when init_from is set, so other files keep their checksum).
  std::string init_from;
  int64_t init_from_step = 0;
  std::string init_from_xxh64;
};

// Pretty JSON, trailing newline; the last field, "checksum", is XXH64 over the canonical
// text of all the others (the same text without the checksum line), so any edit of a value
// is caught however the file is re-formatted.
std::string train_state_serialize(const TrainState& state);
// Throws rfa::Error (naming `source`) on malformed JSON, missing/ill-typed fields, a
// format_version outside [kCheckpointFormatOldest, kCheckpointFormatVersion], or (version 2
// on) a missing or mismatching checksum.
TrainState train_state_parse(std::string_view json, const std::string& source);

}  // namespace rfa
