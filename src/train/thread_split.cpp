#include "train/thread_split.h"

#include <fmt/format.h>

#include "core/error.h"
#include "model/memory_estimate.h"

namespace rfa {

ThreadSplit thread_split_resolve(const Config& c, const ModelSpec& s, int threads) {
  const TrainConfig& t = c.train;
  const ThreadSplit asked = t.thread_split;
  if (asked == ThreadSplit::kernels || threads <= 1) return ThreadSplit::kernels;
  const bool preference = config_preference(c.data);
  if (asked == ThreadSplit::batch) {
    if (t.batch_size < threads)
      fail("train.thread_split batch gives each of the {} threads its own sequences, but train.batch_size is {}; "
           "raise train.batch_size to {} or more, run on {} threads (--threads), or set train.thread_split: kernels",
           threads, t.batch_size, threads, t.batch_size);
    if (t.stateful)
      fail("train.thread_split batch does not run train.stateful (each row's carried state is laid out over the "
           "whole batch); set train.thread_split: kernels or auto");
    if (preference)
      fail("train.thread_split batch does not run preference pairs (DPO scores whole pairs); set "
           "train.thread_split: kernels or auto");
    return ThreadSplit::batch;
  }
  if (t.batch_size % threads != 0 || t.stateful || preference) return ThreadSplit::kernels;
  const double copies = double(threads - 1) * memory_param_elements(s);
  const double acts = memory_activation_elements(s, t.batch_size, s.model.context_length, threads, t.precision);
  return copies <= acts ? ThreadSplit::batch : ThreadSplit::kernels;
}

std::string thread_split_text(ThreadSplit split, int B, int threads) {
  if (threads <= 1) return "thread split: none (one thread)";
  if (split == ThreadSplit::kernels) return fmt::format("thread split: kernels (each kernel over the {} threads)", threads);
  const int least = B / threads, most = (B + threads - 1) / threads;
  return fmt::format("thread split: batch (each of the {} threads its own {} of the {} sequences and gradient copy)",
                     threads, least == most ? fmt::format("{}", least) : fmt::format("{}-{}", least, most), B);
}

}  // namespace rfa
