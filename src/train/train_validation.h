#pragma once
// What the trainer's validation loss covers (TrainSession::evaluate scores it):
//   train.eval_batches = 0 (the default): the whole validation split, the number
//     `rfa eval perplexity RUN --split val` prints for the same checkpoint;
//   N > 0: only the first N x batch_size x context_length + 1 tokens of the split:
//     quicker, but always the same start of the split, so a biased estimate.
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/token_file.h"

namespace rfa {

struct ValidationText {
  std::vector<int32_t> tokens;  // (N) copied once per run
  std::vector<int64_t> starts;  // data.document_boundaries reset: where documents begin in tokens; else empty
  std::string what;             // for the log: which part of the split
};

// Throws Error when the split has fewer than 2 tokens.
ValidationText validation_text(const TokenSplit& val, const TrainConfig& train, int context_length);

}  // namespace rfa
