// Rows of instruction examples: what each position of a padded and a packed row holds, the
// masks (prompt, padding, the label across examples), what is dropped, and the order
// (every row once per epoch, the same rows however a step splits into micro-batches).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "data/example_sampler.h"
#include "support/examples.h"
#include "support/test_files.h"

using namespace rfa;

namespace {

using test::Examples;
using test::kEos;

ExampleLayout layout(Packing packing, int B, int T, bool train_on_prompt = false) {
  return {.packing = packing, .batch_size = B, .context_length = T, .train_on_prompt = train_on_prompt, .pad_id = 0};
}

std::vector<int32_t> row(const std::vector<int32_t>& v, int b, int T) {
  return std::vector<int32_t>(v.begin() + b * T, v.begin() + (b + 1) * T);
}
std::vector<int> row(const std::vector<uint8_t>& v, int b, int T) {
  return std::vector<int>(v.begin() + b * T, v.begin() + (b + 1) * T);
}

constexpr int N = 0, P = 1, R = 2;  // TargetRole none, prompt, response

}  // namespace

TEST_CASE("examples, pad: one example per row; the prompt's and the padding's targets are masked") {
  const Examples ex({{{10, 11, 12}, {20, 21}}, {{13}, {22}}});
  ExampleSampler s(ex.split(), ex.docs(), 0, 2, layout(Packing::pad, 1, 8), 1, 1);
  CHECK(s.rows() == 2);
  std::map<int32_t, int> seen;  // rows by their first token
  for (int64_t step = 0; step < 2; ++step) {
    TokenBatch batch(1, 8);
    s.sample(step, 0, batch);
    ++seen[batch.inputs[0]];
    if (batch.inputs[0] == 10) {
      // 10 11 12 | 20 21 EOS, then padding
      CHECK(batch.inputs == std::vector<int32_t>{10, 11, 12, 20, 21, kEos, 0, 0});
      CHECK(batch.targets == std::vector<int32_t>{-1, -1, 20, 21, kEos, -1, -1, -1});
      CHECK(row(batch.roles, 0, 8) == std::vector<int>{P, P, R, R, R, N, N, N});
      CHECK(s.supervised(step, 0) == 3);
    } else {
      CHECK(batch.inputs == std::vector<int32_t>{13, 22, kEos, 0, 0, 0, 0, 0});
      CHECK(batch.targets == std::vector<int32_t>{22, kEos, -1, -1, -1, -1, -1, -1});
      CHECK(s.supervised(step, 0) == 2);
    }
    CHECK(row(batch.starts, 0, 8) == std::vector<int>{1, 0, 0, 0, 0, 0, 0, 0});
  }
  CHECK(seen == std::map<int32_t, int>{{10, 1}, {13, 1}});  // each row once in the epoch

  ExampleSampler with_prompt(ex.split(), ex.docs(), 0, 1, layout(Packing::pad, 1, 8, true), 1, 1);
  TokenBatch batch(1, 8);
  with_prompt.sample(0, 0, batch);
  CHECK(batch.targets == std::vector<int32_t>{11, 12, 20, 21, kEos, -1, -1, -1});  // data.train_on_prompt
  CHECK(with_prompt.supervised(0, 0) == 5);
}

TEST_CASE("examples, pack: whole examples back to back, the label across two examples masked") {
  const Examples ex({{{10, 11}, {20}}, {{12}, {21, 22}}, {{13, 14, 15}, {23}}});  // 4, 4 and 5 tokens
  // T + 1 = 9: the first two share a row, the third starts the next.
  ExampleSampler s(ex.split(), ex.docs(), 0, 3, layout(Packing::pack, 2, 8), 5, 1);
  CHECK(s.rows() == 2);
  TokenBatch batch(2, 8);
  s.sample(0, 0, batch);
  const int b = batch.inputs[0] == 10 ? 0 : 1;
  CHECK(row(batch.inputs, b, 8) == std::vector<int32_t>{10, 11, 20, kEos, 12, 21, 22, kEos});
  // 11 <- 10 is prompt, 12 <- EOS crosses examples, the last target EOS <- 22 is the row's ninth token.
  CHECK(row(batch.targets, b, 8) == std::vector<int32_t>{-1, 20, kEos, -1, 21, 22, kEos, -1});
  CHECK(row(batch.roles, b, 8) == std::vector<int>{P, R, R, N, R, R, R, N});
  CHECK(row(batch.starts, b, 8) == std::vector<int>{1, 0, 0, 0, 1, 0, 0, 0});
  CHECK(row(batch.inputs, 1 - b, 8) == std::vector<int32_t>{13, 14, 15, 23, kEos, 0, 0, 0});
  CHECK(row(batch.targets, 1 - b, 8) == std::vector<int32_t>{-1, -1, 23, kEos, -1, -1, -1, -1});
  CHECK(s.supervised(0, 0) == 2 + 3 + 2);
}

TEST_CASE("examples: too long and nothing to learn are dropped and counted; none left is refused") {
  const Examples ex({{{10, 11, 12, 13, 14, 15, 16, 17, 18}, {20}}, {{}, {}}, {{10}, {20}}});
  ExampleSampler s(ex.split(), ex.docs(), 0, 3, layout(Packing::pad, 1, 8), 1, 1);
  CHECK(s.counts().kept == 1);
  CHECK(s.counts().too_long == 1);          // 11 tokens > T + 1 = 9
  CHECK(s.counts().nothing_to_learn == 1);  // [EOS] alone: no target
  CHECK(s.rows() == 1);
  const std::string e = test::error_of([&] { ExampleSampler(ex.split(), ex.docs(), 0, 2, layout(Packing::pad, 1, 8), 1, 1); });
  CHECK(e.find("none of the 2 training examples can be trained on: 1 are longer than model.context_length + 1 = 9") !=
        std::string::npos);
}

TEST_CASE("examples: every row once per epoch, a pure function of the step; B x M rows however they split") {
  std::vector<std::pair<std::vector<uint16_t>, std::vector<uint16_t>>> parts;
  for (uint16_t i = 0; i < 23; ++i) parts.push_back({{static_cast<uint16_t>(100 + i)}, {static_cast<uint16_t>(200 + i)}});
  const Examples ex(parts);
  ExampleSampler one(ex.split(), ex.docs(), 0, ex.size(), layout(Packing::pad, 1, 4), 9, 4);   // B 1, M 4
  ExampleSampler four(ex.split(), ex.docs(), 0, ex.size(), layout(Packing::pad, 4, 4), 9, 1);  // B 4, M 1
  std::multiset<int32_t> epoch;
  std::vector<int32_t> order;
  for (int64_t step = 0; step < 6; ++step) {  // 24 rows: the epoch of 23, and one of the next
    TokenBatch b4(4, 4);
    four.sample(step, 0, b4);
    CHECK(four.supervised_step(step) == one.supervised_step(step));
    for (int m = 0; m < 4; ++m) {
      TokenBatch b1(1, 4);
      one.sample(step, m, b1);
      CHECK(b1.inputs[0] == b4.inputs[static_cast<size_t>(m) * 4]);
      order.push_back(b1.inputs[0]);
      if (epoch.size() < 23) epoch.insert(b1.inputs[0]);
    }
  }
  CHECK(std::set<int32_t>(epoch.begin(), epoch.end()).size() == 23);  // each example once in the first epoch
  CHECK(!std::is_sorted(order.begin(), order.begin() + 23));        // shuffled
  ExampleSampler again(ex.split(), ex.docs(), 0, ex.size(), layout(Packing::pad, 1, 4), 9, 4);
  TokenBatch a(1, 4), b(1, 4);
  again.sample(5, 3, a);
  one.sample(5, 3, b);
  CHECK(a.inputs == b.inputs);
  ExampleSampler other(ex.split(), ex.docs(), 0, ex.size(), layout(Packing::pad, 1, 4), 10, 4);  // another seed
  std::vector<int32_t> other_order;
  for (int m = 0; m < 4; ++m) {
    TokenBatch t(1, 4);
    other.sample(0, m, t);
    other_order.push_back(t.inputs[0]);
  }
  CHECK(other_order != std::vector<int32_t>(order.begin(), order.begin() + 4));
}

TEST_CASE("examples: supervised() counts exactly the targets sample() trains on") {
  std::vector<std::pair<std::vector<uint16_t>, std::vector<uint16_t>>> parts;
  for (uint16_t i = 0; i < 17; ++i)
    parts.push_back({std::vector<uint16_t>(1 + i % 4, 7), std::vector<uint16_t>(i % 3, 8)});
  const Examples ex(parts);
  for (Packing packing : {Packing::pad, Packing::pack})
    for (bool prompt : {false, true}) {
      ExampleSampler s(ex.split(), ex.docs(), 0, ex.size(), layout(packing, 3, 10, prompt), 4, 2);
      for (int64_t step = 0; step < 5; ++step)
        for (int m = 0; m < 2; ++m) {
          TokenBatch batch(3, 10);
          s.sample(step, m, batch);
          CHECK(s.supervised(step, m) == std::count_if(batch.targets.begin(), batch.targets.end(),
                                                        [](int32_t t) { return t >= 0; }));
        }
    }
}

TEST_CASE("document starts: a window marks the first token of each document it holds") {
  const Examples ex({{{}, {1, 1, 1}}, {{}, {1}}, {{}, {1, 1, 1, 1}}});  // documents of 4, 2 and 5 tokens
  std::vector<uint8_t> starts(6);
  document_starts_fill(ex.docs(), 0, 6, starts.data());
  CHECK(starts == std::vector<uint8_t>{1, 0, 0, 0, 1, 0});
  document_starts_fill(ex.docs(), 3, 6, starts.data());
  CHECK(starts == std::vector<uint8_t>{0, 1, 0, 1, 0, 0});
}
