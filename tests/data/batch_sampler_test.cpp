#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "data/batch_sampler.h"
#include "support/iota_split.h"

using namespace rfa;
using test::IotaSplit;

TEST_CASE("batch sampler: rows are contiguous windows, targets shifted by one") {
  IotaSplit data(1000);
  const int B = 6, T = 16;
  BatchSampler sampler(data.split(), B, T, 1337);
  TokenBatch batch(B, T);
  for (int64_t step = 0; step < 50; ++step) {
    sampler.sample(step, 0, batch);
    for (int b = 0; b < B; ++b) {
      int32_t s = batch.inputs[b * T];
      REQUIRE(s >= 0);
      REQUIRE(s + T <= 999);  // the last target is token s + T < N
      for (int t = 0; t < T; ++t) {
        CHECK(batch.inputs[b * T + t] == s + t);
        CHECK(batch.targets[b * T + t] == s + t + 1);
      }
    }
  }
}

TEST_CASE("batch sampler: a batch is a pure function of (seed, step, micro_batch)") {
  IotaSplit data(5000);
  const int B = 4, T = 8;
  TokenBatch a(B, T), b(B, T);
  BatchSampler s1(data.split(), B, T, 42);
  s1.sample(7, 0, a);
  s1.sample(3, 1, b);  // other draws in between change nothing: no hidden state
  BatchSampler s2(data.split(), B, T, 42);  // a fresh sampler, as after a resume
  s2.sample(7, 0, b);
  CHECK(a.inputs == b.inputs);
  CHECK(a.targets == b.targets);
  s2.sample(8, 0, b);
  CHECK(a.inputs != b.inputs);  // next step
  s2.sample(7, 1, b);
  CHECK(a.inputs != b.inputs);  // next micro-batch
  BatchSampler s3(data.split(), B, T, 43);
  s3.sample(7, 0, b);
  CHECK(a.inputs != b.inputs);  // other seed
}

TEST_CASE("batch sampler: starts cover the whole split, including both ends") {
  const int T = 4;
  IotaSplit data(T + 3);  // 3 possible starts: 0, 1, 2
  BatchSampler sampler(data.split(), 1, T, 1);
  std::vector<int> seen(3, 0);
  TokenBatch batch(1, T);
  for (int64_t step = 0; step < 300; ++step) {
    sampler.sample(step, 0, batch);
    REQUIRE((batch.inputs[0] >= 0 && batch.inputs[0] < 3));
    ++seen[batch.inputs[0]];
  }
  for (int count : seen) CHECK(count > 60);
}

TEST_CASE("batch sampler: a split shorter than T + 1 is a clear error") {
  IotaSplit data(16);
  CHECK_THROWS_WITH_AS(BatchSampler(data.split(), 2, 16, 0), doctest::Contains("fewer than context_length + 1 = 17"),
                       Error);
  BatchSampler exact(data.split(), 2, 15, 0);  // exactly T + 1 tokens: the one window
  TokenBatch batch(2, 15);
  exact.sample(0, 0, batch);
  CHECK(batch.inputs[0] == 0);
  CHECK(batch.targets[29] == 15);
  CHECK_THROWS_AS(BatchSampler(data.split(), 0, 4, 0), Error);
}

TEST_CASE("sequential batches: consecutive non-overlapping windows, tail dropped") {
  const int B = 3, T = 10;
  IotaSplit data(75);  // (75 - 1) / 10 = 7 windows; tokens 71..74 are the dropped tail
  SequentialBatches windows(data.split(), B, T);
  CHECK(windows.windows() == 7);
  TokenBatch batch(B, T);
  std::vector<int> rows;
  int64_t w = 0;
  while (int n = windows.next(batch)) {
    rows.push_back(n);
    for (int b = 0; b < n; ++b, ++w) {
      for (int t = 0; t < T; ++t) {
        CHECK(batch.inputs[b * T + t] == w * T + t);
        CHECK(batch.targets[b * T + t] == w * T + t + 1);
      }
    }
  }
  CHECK(rows == std::vector<int>{3, 3, 1});
  CHECK(windows.next(batch) == 0);
  windows.reset();
  CHECK(windows.next(batch) == 3);
  CHECK(batch.inputs[0] == 0);

  SequentialBatches capped(data.split(), B, T, 4);
  CHECK(capped.windows() == 4);
  CHECK(capped.next(batch) == 3);
  CHECK(capped.next(batch) == 1);
  CHECK(capped.next(batch) == 0);
  CHECK_THROWS_AS(SequentialBatches(data.split(), B, 80), Error);
}

TEST_CASE("token split: 16- and 32-bit storage read the same ids") {
  std::vector<uint32_t> wide = {0, 1, 70000, 123456, 5};
  TokenSplit split(reinterpret_cast<const unsigned char*>(wide.data()), 4, 5, 0);
  CHECK(split[2] == 70000);
  std::vector<int32_t> out(3);
  split.copy(2, 3, out.data());
  CHECK(out == std::vector<int32_t>{70000, 123456, 5});
  CHECK(split.to_vector() == std::vector<int32_t>{0, 1, 70000, 123456, 5});
  std::vector<uint16_t> narrow = {65535, 2, 3};
  TokenSplit split16(reinterpret_cast<const unsigned char*>(narrow.data()), 2, 3, 0);
  CHECK(split16[0] == 65535);  // unsigned: no sign extension
  CHECK_THROWS(split16.copy(2, 2, out.data()));  // out of range asserts
}

TEST_CASE("batch sampler: data-parallel ranks own disjoint micro-batches whose union is the global batch") {
  for (int ranks = 1; ranks <= 8; ++ranks)
    for (int accum = 1; accum <= 4; ++accum) {
      CAPTURE(ranks);
      CAPTURE(accum);
      std::vector<int> owner(size_t(ranks) * accum, -1);  // global micro-batch -> the rank that draws it
      for (int r = 0; r < ranks; ++r)
        for (int m = 0; m < accum; ++m) {
          const int g = batch_global_micro(r, ranks, m);
          REQUIRE(g >= 0);
          REQUIRE(g < ranks * accum);
          CHECK(owner[size_t(g)] == -1);  // no two ranks (or two micro-batches of one rank) share one
          owner[size_t(g)] = r;
        }
      CHECK(std::count(owner.begin(), owner.end(), -1) == 0);  // every global micro-batch is drawn
    }
  CHECK(batch_global_micro(0, 1, 3) == 3);  // one rank draws micro-batch m as before
}

TEST_CASE("batch sampler: 2 ranks x grad_accum 2 draw the rows of 1 rank x grad_accum 4, each once") {
  IotaSplit data(5000);
  const int B = 3, T = 8, ranks = 2, accum = 2;
  BatchSampler sampler(data.split(), B, T, 99);
  TokenBatch batch(B, T);
  for (int64_t step = 0; step < 20; ++step) {
    std::vector<std::vector<int32_t>> one_rank;  // rows of the 4 micro-batches of one rank, in order
    for (int m = 0; m < ranks * accum; ++m) {
      sampler.sample(step, batch_global_micro(0, 1, m), batch);
      one_rank.push_back(batch.inputs);
    }
    std::vector<int> seen(one_rank.size(), 0);
    for (int r = 0; r < ranks; ++r)
      for (int m = 0; m < accum; ++m) {
        const int g = batch_global_micro(r, ranks, m);
        sampler.sample(step, g, batch);
        CHECK(batch.inputs == one_rank[size_t(g)]);
        ++seen[size_t(g)];
      }
    CHECK(seen == std::vector<int>(one_rank.size(), 1));
  }
}
