#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "data/stream_sampler.h"
#include "support/iota_split.h"
#include "support/test_files.h"

using namespace rfa;
using test::IotaSplit;

TEST_CASE("stream sampler: row b of micro-batch m reads stream m*B+b from offset floor(sigma*N/S) onward") {
  IotaSplit data(1000);
  const int B = 3, T = 10, A = 2;  // S = 6 streams of 166 or 167 tokens
  StreamSampler sampler(data.split(), B, T, A);
  TokenBatch batch(B, T);
  for (int m = 0; m < A; ++m)
    for (int b = 0; b < B; ++b) {
      const int64_t sigma = int64_t(m) * B + b;
      CHECK(sampler.stream_begin(m, b) == sigma * 1000 / 6);
      CHECK(sampler.stream_period(m, b) == 160);  // 16 whole windows of 10 (+1 target) in 166..167 tokens
    }
  // Step s: the next T tokens of each stream, contiguous with step s-1's.
  for (int64_t step = 0; step < 40; ++step)
    for (int m = 0; m < A; ++m) {
      sampler.sample(step, m, batch);
      for (int b = 0; b < B; ++b) {
        const int64_t expect = sampler.stream_begin(m, b) + (step % 16) * T;  // wraps after 16 windows
        CHECK(sampler.offset(step, m, b) == expect);
        for (int t = 0; t < T; ++t) {
          CHECK(batch.inputs[b * T + t] == expect + t);
          CHECK(batch.targets[b * T + t] == expect + t + 1);
        }
        // The window stays inside its stream: its last target is before the next stream begins.
        const int64_t next = (m * B + b + 1) * 1000 / 6;
        CHECK(expect + T < next);
      }
    }
}

TEST_CASE("stream sampler: streams shorter than T+1 tokens are refused with the keys to change") {
  IotaSplit data(100);
  const std::string m = test::error_of([&] { StreamSampler(data.split(), 8, 16, 1); });  // 12 tokens per stream
  CHECK(m.find("train.batch_size") != std::string::npos);
  CHECK(m.find("12 tokens per stream") != std::string::npos);
  CHECK(m.find("model.context_length + 1 = 17") != std::string::npos);
}
