#pragma once
// The vocabulary of the model a config describes, for the benchmarks (which build a model without
// training one): model.vocab_size when set, else the tokenizer's, read from its file when the file
// exists (a char tokenizer keeps fewer than its configured upper bound), else tokenizer.vocab_size.
#include "config/config.h"

namespace rfa {

int config_model_vocab(const Config& config);

}  // namespace rfa
