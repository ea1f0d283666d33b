#pragma once
// The tokenizer copy inside a checkpoint (DIR/tokenizer.model), checked against
// the checksum state.json records for the tokenizer the model was trained with.
// A model is only usable with exactly that tokenizer, so re-training one (or
// taking any other) is never the fix: an intact copy must be restored.
#include <string>
#include <vector>

#include "checkpoint/train_state.h"

namespace rfa {

// Files holding the tokenizer whose tokenizer_xxh64 is `expected`, in this order:
// RUN/tokenizer.model when `dir` is RUN/checkpoints/step-N, the tokenizer.model
// of the other checkpoints next to `dir` (newest first), then `tokenizer_path`
// (the config's tokenizer.path; "" = none).
std::vector<std::string> tokenizer_intact_copies(const std::string& dir, const std::string& expected,
                                                 const std::string& tokenizer_path);

// "restore it with `cp A DIR/tokenizer.model` (...)" when an intact copy exists,
// else what was searched; ends without a period.
std::string tokenizer_restore_advice(const std::string& dir, const std::string& expected,
                                     const std::string& tokenizer_path);

// Throws Error when DIR/tokenizer.model exists and its checksum differs from
// state.tokenizer_xxh64: names the corrupt file, both checksums, says the
// model files are not concerned, and how to restore the copy. No-op when either
// the copy or the recorded checksum is absent.
void checkpoint_tokenizer_verify(const std::string& dir, const TrainState& state, const std::string& tokenizer_path);

// The tokenizer checkpoint `dir` was trained with, for training on from it (a resume, a
// fine-tune): its own copy (verified as above), else `tokenizer_path` (the config's
// tokenizer.path) if its checksum is the one state.json records. Throws Error otherwise,
// naming where an intact copy is.
std::string checkpoint_tokenizer_path(const std::string& dir, const TrainState& state,
                                      const std::string& tokenizer_path);

}  // namespace rfa
