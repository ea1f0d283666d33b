// The MQAR recall task (data/mqar.h, docs/recall.md): examples are a pure function of (seed,
// index), every answer is the value its key was paired with, the token file trains only on
// the answers, and the answer accuracy of a perfect predictor is 1, of a random one over the
// values about 2 / vocab.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <array>
#include <map>
#include <set>
#include <vector>

#include "core/rng.h"
#include "data/example_sampler.h"
#include "data/mqar.h"
#include "eval/example_nll.h"
#include "support/temp_dir.h"
#include "support/test_files.h"
#include "tokenizer/tokenizer.h"

using namespace rfa;

namespace {

MqarOptions options(int T, int P, int vocab, uint64_t seed = 1, int Q = 0) {
  MqarOptions o;
  o.seq_len = T;
  o.pairs = P;
  o.queries = Q;
  o.vocab = vocab;
  o.train = 40;
  o.val = 8;
  o.seed = seed;
  return o;
}

// Checks example x of o as the task defines it; returns the (query, answer) pairs.
void check_example(const MqarOptions& o, const std::vector<int32_t>& x) {
  const int P = o.pairs, Q = o.queries_or_pairs(), K = o.vocab / 2, p = mqar_response_start(o);
  REQUIRE(x.size() == size_t(o.seq_len) + 1);
  CHECK(x.back() == -1);
  std::map<int32_t, int32_t> value_of;
  std::set<int32_t> values;
  for (int i = 0; i < P; ++i) {
    const int32_t k = x[size_t(2 * i)], v = x[size_t(2 * i + 1)];
    CHECK((k >= 0 && k < K));
    CHECK((v >= K && v < 2 * K));
    CHECK(value_of.emplace(k, v).second);  // distinct keys
    CHECK(values.insert(v).second);        // distinct values
  }
  for (int j = 2 * P; j < p; ++j) CHECK(x[size_t(j)] == mqar_blank(o));
  std::set<int32_t> asked;
  for (int i = 0; i < Q; ++i) {
    const int32_t q = x[size_t(p + 2 * i)], a = x[size_t(p + 2 * i + 1)];
    REQUIRE(value_of.count(q) == 1);  // a key shown before
    CHECK(a == value_of[q]);          // its answer is the value paired with it
    CHECK(asked.insert(q).second);    // each key asked at most once
  }
}

}  // namespace

TEST_CASE("mqar: examples are deterministic per seed and index, and differ across them") {
  const MqarOptions o = options(64, 8, 64);
  CHECK(mqar_example(o, 3) == mqar_example(o, 3));
  CHECK(mqar_example(o, 3) != mqar_example(o, 4));
  CHECK(mqar_example(o, 3) != mqar_example(options(64, 8, 64, 2), 3));
}

TEST_CASE("mqar: each query's answer is the value paired with that key, for T 64..512 and 4..64 pairs") {
  for (const auto& [T, P, Q] : std::vector<std::array<int, 3>>{
           {64, 4, 0}, {64, 8, 0}, {64, 16, 0}, {64, 8, 3}, {128, 32, 0}, {256, 16, 0}, {256, 64, 0}, {512, 64, 0},
           {512, 4, 0}})
    for (int64_t e = 0; e < 20; ++e) check_example(options(T, P, 8192, 7, Q), mqar_example(options(T, P, 8192, 7, Q), e));
  // Small vocab: P = vocab / 2 uses every key and every value.
  for (int64_t e = 0; e < 20; ++e) check_example(options(64, 8, 16), mqar_example(options(64, 8, 16), e));
}

TEST_CASE("mqar: options that cannot make an example are refused naming the fix") {
  CHECK_THROWS_WITH_AS(mqar_check(options(64, 17, 8192)), doctest::Contains("raise --seq-len to >= 68"), Error);
  CHECK_THROWS_WITH_AS(mqar_check(options(64, 8, 15)), doctest::Contains("must be even"), Error);
  CHECK_THROWS_WITH_AS(mqar_check(options(64, 8, 8192, 1, 9)), doctest::Contains("--queries 9"), Error);
  CHECK_NOTHROW(mqar_check(options(64, 16, 8192)));
}

TEST_CASE("mqar: the token file holds the examples, the loss only on the answers") {
  test::TempDir dir;
  const MqarOptions o = options(32, 4, 16, 5, 3);
  const MqarFiles files = mqar_write(o, dir.path());
  const Tokenizer tok = Tokenizer::load(files.tokenizer);
  CHECK(tok.vocab_size() == 3 + 256 + 17);
  const TokenFile f = TokenFile::open(files.tokens, tok);
  CHECK(f.header().format == DataFormat::mqar);
  const DocumentTable docs = f.documents();
  REQUIRE(docs.size() == o.train + o.val);
  CHECK(f.header().split_document == o.train);
  CHECK(docs.answers_only());
  // Document d is example d, symbol by symbol (each symbol one token, the end EOS).
  std::map<int32_t, int32_t> symbol_of;  // token -> symbol, consistent over the file
  for (int64_t d = 0; d < docs.size(); ++d) {
    const std::vector<int32_t> x = mqar_example(o, d);
    REQUIRE(docs.end(d) - docs.start(d) == int64_t(x.size()));
    CHECK(docs.response_start(d) - docs.start(d) == mqar_response_start(o));
    for (size_t j = 0; j < x.size(); ++j) {
      const int32_t t = f.all()[docs.start(d) + int64_t(j)];
      if (x[j] < 0) {
        CHECK(t == tok.eos_id());
        continue;
      }
      const auto [it, fresh] = symbol_of.emplace(t, x[j]);
      CHECK(it->second == x[j]);
    }
    CHECK(example_supervised(docs, d, false) == o.queries_or_pairs());
  }
  // A padded row trains on the answers alone: the targets after each query key.
  const ExampleLayout layout{.packing = Packing::pad, .batch_size = 1, .context_length = o.seq_len, .pad_id = 0};
  ExampleSampler s(f.all(), docs, 0, o.train, layout, 1, 1);
  TokenBatch batch(1, o.seq_len);
  s.sample(0, 0, batch);
  int trained = 0;
  const int p = mqar_response_start(o);
  for (int t = 0; t < o.seq_len; ++t) {  // target t is token t + 1 of the example
    const bool answer = t + 1 > p && (t + 1 - p) % 2 == 1;
    CHECK((batch.targets[size_t(t)] >= 0) == answer);
    CHECK(batch.roles[size_t(t)] == uint8_t(answer ? TargetRole::response : TargetRole::prompt));
    trained += batch.targets[size_t(t)] >= 0;
  }
  CHECK(trained == o.queries_or_pairs());
  CHECK(s.supervised(0, 0) == o.queries_or_pairs());
}

TEST_CASE("mqar: answer accuracy is 1 for a perfect predictor and about 2 / vocab for a random one over values") {
  const MqarOptions o = options(64, 8, 64);
  const int V = o.vocab + 1, n = o.seq_len + 1, p = mqar_response_start(o);
  // One document as a table: (start 0, response start p); the answers are x[p + 1], x[p + 3], ...
  const std::vector<int64_t> table = {0, p};
  const DocumentTable docs(reinterpret_cast<const unsigned char*>(table.data()), 1, n, true);
  std::vector<float> logits(size_t(n - 1) * V);
  ExampleNll perfect, random, flat;
  CounterRng rng(11);
  for (int64_t e = 0; e < 1000; ++e) {
    std::vector<int32_t> x = mqar_example(o, e);
    x.back() = mqar_blank(o);  // the end symbol: any id in [0, V)
    for (int j = 1; j < n; ++j) {  // row j - 1 predicts x[j]: all of its mass on it
      float* row = logits.data() + size_t(j - 1) * V;
      std::fill(row, row + V, 0.0f);
      row[x[size_t(j)]] = 30.0f;
    }
    example_score(logits.data(), V, x.data(), n, p, docs, perfect);
    for (int j = 1; j < n; ++j) {  // a random value token
      float* row = logits.data() + size_t(j - 1) * V;
      std::fill(row, row + V, 0.0f);
      row[o.vocab / 2 + int(rng.below(uint64_t(o.vocab / 2)))] = 1.0f;
    }
    example_score(logits.data(), V, x.data(), n, p, docs, random);
    std::fill(logits.begin(), logits.end(), 0.0f);  // uniform over all V: the argmax is token 0, a key
    example_score(logits.data(), V, x.data(), n, p, docs, flat);
  }
  CHECK(perfect.response_tokens == 1000 * o.pairs);
  CHECK(perfect.prompt_tokens == 1000 * (n - 1 - o.pairs));
  CHECK(perfect.response_accuracy() == 1.0);
  CHECK(perfect.response_mean() < 1e-10);
  const double chance = 1.0 / (o.vocab / 2), sd = std::sqrt(chance * (1 - chance) / random.response_tokens);
  CHECK(std::abs(random.response_accuracy() - chance) < 5 * sd);
  CHECK(flat.response_accuracy() == 0.0);
  CHECK(flat.response_mean() == doctest::Approx(std::log(double(V))).epsilon(1e-9));
}
