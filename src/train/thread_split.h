#pragma once
// train.thread_split: how a training step uses the threads (train/batch_shards.h).
#include <string>

#include "config/config.h"
#include "model/model_spec.h"

namespace rfa {

// The split a run on `threads` threads takes: batch or kernels (never automatic). auto gives batch
// where it fits: more than one thread, B a multiple of them, neither train.stateful (each row's
// carried state is laid out over the whole batch) nor preference pairs (DPO scores whole pairs),
// and the gradient copies ((threads - 1) x P floats) no larger than the activations. Throws Error
// naming the key when `batch` is asked for where it cannot run.
ThreadSplit thread_split_resolve(const Config& config, const ModelSpec& spec, int threads);

// One line for the logs: the split and what it means for B rows on `threads` threads.
std::string thread_split_text(ThreadSplit split, int B, int threads);

}  // namespace rfa
