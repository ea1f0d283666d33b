#pragma once
// The decode loop the no-allocation tests hold to zero heap allocations (train_no_alloc_test.cpp in
// fp32, train_no_alloc_bf16_test.cpp in bf16): 3 rows prefilled with 4 tokens, then steps of every
// row and of rows {2, 0}, each row sampled from its logits; a warm-up step, then `steps` counted.
#include <cstdint>

#include "decode/decoder.h"
#include "decode/sampler.h"
#include "support/alloc_counter.h"

namespace rfa::test {

inline constexpr int kDecodeNoAllocRows = 3;  // the decoder's batch

// dec: built with batch kDecodeNoAllocRows; V: its vocabulary. After it every row has moved
// 4 + 2 (steps + 1) positions but row 1 (4 + steps + 1).
inline void check_decode_steps_allocate_nothing(Decoder<float>& dec, int V, int steps) {
  constexpr int B = kDecodeNoAllocRows;
  Sampler sampler(V, {.temperature = 0.9, .top_k = 5, .top_p = 0.9, .seed = 3});
  const int32_t prompt[B * 4] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  dec.prefill(prompt, 4);
  int32_t tokens[B] = {1, 2, 3};
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
