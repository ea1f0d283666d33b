#pragma once
// The loops the no-allocation tests hold to zero heap allocations, in fp32 (train_no_alloc_test.cpp)
// and bf16 (train_no_alloc_bf16_test.cpp): training steps under either thread split, and decode steps.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include "config/config.h"
#include "core/parallel.h"
#include "decode/decoder.h"
#include "decode/sampler.h"
#include "support/alloc_counter.h"
#include "train/train_session.h"

namespace rfa::test {

// c under the thread split `how`, with a batch of a row a thread at least (the batch split's need).
inline Config with_thread_split(Config c, ThreadSplit how) {
  c.train.thread_split = how;
  c.train.batch_size = std::max(3, thread_count());
  return c;
}

// A warm-up step (oneDNN's first call per shape sets up its kernels), then `steps` training steps
// with no heap allocation; oneDNN's own (kernels/onednn_call_scope.h) checked the same every step,
// never growing. Returns that count.
inline long check_training_steps_allocate_nothing(TrainSession& session, const BatchSampler& sampler, int steps) {
  session.step(0, sampler);
  int64_t s = 1;
  const std::vector<long> onednn = check_no_allocation(steps, [&] { session.step(s++, sampler); });
  CHECK(onednn == std::vector<long>(size_t(steps), onednn[0]));
  return onednn[0];
}

// The decode loop: 8 rows prefilled with 4 tokens, then steps of every row (an fp32 step of 8 rows
// splits its row-wise work by rows over the threads, decoder.cpp) and of rows {2, 0}, each row sampled
// from its logits; a warm-up step, then `steps` counted.
inline constexpr int kDecodeNoAllocRows = 8;  // the decoder's batch

// dec: built with batch kDecodeNoAllocRows; V: its vocabulary. After it every row has moved
// 4 + 2 (steps + 1) positions but row 1 (4 + steps + 1).
inline void check_decode_steps_allocate_nothing(Decoder<float>& dec, int V, int steps) {
  constexpr int B = kDecodeNoAllocRows;
  Sampler sampler(V, {.temperature = 0.9, .top_k = 5, .top_p = 0.9, .seed = 3});
  int32_t prompt[B * 4], tokens[B];
  for (int i = 0; i < B * 4; ++i) prompt[i] = 1 + i % (V - 1);
  for (int b = 0; b < B; ++b) tokens[b] = 1 + b % (V - 1);
  dec.prefill(prompt, 4);
  const int rows[2] = {2, 0};
  auto decode_step = [&] {
    const float* logits = dec.step(tokens);
    for (int b = 0; b < B; ++b) tokens[b] = sampler.sample(logits + b * V, uint64_t(b), dec.position(b));
    const int32_t some[2] = {tokens[2], tokens[0]};
    logits = dec.step_rows(rows, 2, some);
    for (int i = 0; i < 2; ++i) tokens[rows[i]] = sampler.sample(logits + i * V, uint64_t(rows[i]), dec.position(rows[i]));
  };
  decode_step();  // warm-up
  check_no_allocation(steps, decode_step);
}

}  // namespace rfa::test
