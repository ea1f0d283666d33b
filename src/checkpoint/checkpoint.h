#pragma once
// A whole training checkpoint: the files inside one checkpoint directory.
//   model.safetensors      weights (+ each RFA layer's fixed evaluation random matrices)
//   optimizer.safetensors  AdamW moments
//   stream.safetensors     stateful runs only: stream offsets and carried states (train/train_streams.h)
//   state.json             TrainState
//   config.yaml            the resolved config (as dumped by the config module)
//   tokenizer.model        a copy of the tokenizer (optional)
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "checkpoint/train_state.h"
#include "config/config.h"
#include "core/error.h"

namespace rfa {

struct CheckpointContents {
  std::vector<TensorRef> model;
  std::vector<TensorRef> optimizer;
  std::vector<TensorRef> streams;  // empty: no stream.safetensors (a run that is not stateful)
  TrainState state;
  std::string config_yaml;
  std::string tokenizer_path;  // copied in if non-empty
};

// Writes root/step-NNNNNN atomically (checkpoint_dir.h), updates `latest`, then prunes per
// `retention`. Returns the checkpoint directory. Throws rfa::Error with path and reason;
// a failed save never replaces or removes a good checkpoint.
std::string checkpoint_save(const std::string& root, const CheckpointContents& contents,
                            const CheckpointConfig& retention);

struct LoadedCheckpoint {
  std::string dir;
  SafetensorsReader model;      // header checked; tensors read on demand (model_tensors_load)
  SafetensorsReader optimizer;
  SafetensorsFile streams;  // loaded only when expected
  TrainState state;
  std::string config_yaml;
  std::string tokenizer_path;  // dir/tokenizer.model if present, else ""
};

// Loads and validates one checkpoint directory: state.json format version, both
// safetensors files' headers (structure, table checksums; each tensor's own checksum is checked
// when it is read into its destination) and their tensors against the expected lists
// (an empty `optimizer_expected` skips loading optimizer.safetensors, e.g. for inference;
// an empty `streams_expected` skips stream.safetensors, which a stateful run's resume requires).
LoadedCheckpoint checkpoint_load(const std::string& dir, const std::vector<TensorSpec>& model_expected,
                                 const std::vector<TensorSpec>& optimizer_expected,
                                 const std::vector<TensorSpec>& streams_expected = {});

// What to do about a damaged or missing file of checkpoint `dir`: restore it, or name one of
// the other checkpoints beside it (listed, newest first).
std::string checkpoint_damaged_fix(const std::string& dir);

// read()'s result; an Error it throws (a file of checkpoint `dir` missing, truncated or
// corrupt) is rethrown with checkpoint_damaged_fix(dir) appended.
template <typename Read>
auto checkpoint_file_read(const std::string& dir, Read read) {
  try {
    return read();
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "; " + checkpoint_damaged_fix(dir));
  }
}

}  // namespace rfa
