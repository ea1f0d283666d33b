// The training step on in-memory tokens: a tiny model overfits one batch, the
// same seed reproduces the same losses bit for bit, a different seed does not.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "config/config_enums.h"
#include "support/train_fixtures.h"
#include "train/train_session.h"

using namespace rfa;

namespace {

using test::random_tokens;
using test::split_of;

Config tiny_config(AttentionKind kind) {
  Config c = test::train_config(kind, 16);
  c.model.init_std = 0.05;
  c.attention.num_features = 16;
  c.train.batch_size = 4;
  c.train.steps = 300;
  c.train.seed = 5;
  c.optim.lr = 1e-2;
  c.optim.lr_min = 1e-3;
  c.optim.warmup_steps = 10;
  c.optim.weight_decay = 0.0;
  return c;
}

double overfit(AttentionKind kind) {
  Config c = tiny_config(kind);
  // T + 1 tokens: every sampled window is the same single sequence.
  std::vector<uint16_t> tokens = random_tokens(c.model.context_length + 1, 11);
  TokenSplit split = split_of(tokens);
  TrainSession session(c, model_spec_make(c.model, c.attention));
  BatchSampler sampler(split, c.train.batch_size, c.model.context_length, c.train.seed);
  double first = session.step(0, sampler).loss;
  CHECK(first == doctest::Approx(std::log(16.0)).epsilon(0.05));
  for (int64_t s = 1; s < c.train.steps; ++s) session.step(s, sampler);
  double eval = session.evaluate(split.to_vector());
  MESSAGE(std::string(enum_name(kind)), ": loss ", first, " -> eval ", eval);
  return eval;
}

}  // namespace

TEST_CASE("train: a tiny softmax model overfits one batch") { CHECK(overfit(AttentionKind::softmax) < 0.05); }

TEST_CASE("train: a tiny rfa_gate model overfits one batch") { CHECK(overfit(AttentionKind::rfa_gate) < 0.05); }

TEST_CASE("train: the same seed gives the same losses twice; another seed differs") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate}) {
    Config c = tiny_config(kind);
    std::vector<uint16_t> tokens = random_tokens(4000, 3);
    TokenSplit split = split_of(tokens);
    auto run = [&](uint64_t seed) {
      Config ci = c;
      ci.train.seed = seed;
      TrainSession session(ci, model_spec_make(ci.model, ci.attention));
      BatchSampler sampler(split, ci.train.batch_size, ci.model.context_length, seed);
      std::vector<double> losses;
      for (int64_t s = 0; s < 6; ++s) losses.push_back(session.step(s, sampler).loss);
      losses.push_back(session.evaluate(split.to_vector()));
      return losses;
    };
    std::vector<double> a = run(5), b = run(5), d = run(6);
    CHECK(a == b);
    CHECK(a != d);
  }
}

TEST_CASE("train: a non-finite loss stops with the step (1-based, as logged) and the tensor") {
  Config c = tiny_config(AttentionKind::softmax);
  std::vector<uint16_t> tokens = random_tokens(200, 3);
  TokenSplit split = split_of(tokens);
  TrainSession session(c, model_spec_make(c.model, c.attention));
  BatchSampler sampler(split, c.train.batch_size, c.model.context_length, 1);
  session.step(0, sampler);
  Model<float>& m = session.model();
  m.params()[m.table.get("layers.1.ffn.w2").offset + 3] = NAN;
  // step(1) takes the second step: the log has just shown "step 1/N", so the message says step 2.
  CHECK_THROWS_WITH_AS(session.step(1, sampler), doctest::Contains("step 2: the training loss is not finite"),
                       Error);
  // w2 of the last layer writes the final residual first.
  CHECK_THROWS_WITH_AS(session.step(1, sampler), doctest::Contains("activation is resid_final["), Error);
}

// The parameters and their table after `steps` steps of config c on 4,000 random tokens; `before`
// may change the initial parameters.
std::pair<std::vector<float>, ParamTable> params_after(const Config& c, int64_t steps,
                                                      void (*before)(Model<float>&) = nullptr) {
  static const std::vector<uint16_t> tokens = random_tokens(4000, 3);
  const TokenSplit split = split_of(tokens);
  TrainSession session(c, model_spec_make(c.model, c.attention));
  if (before) before(session.model());
  BatchSampler sampler(split, c.train.batch_size, c.model.context_length, 5);
  for (int64_t s = 0; s < steps; ++s) session.step(s, sampler);
  const Model<float>& m = session.model();
  return {std::vector<float>(m.params(), m.params() + m.table.size()), m.table};
}

// Calls check(e, j) for every element j of every tensor e (padding skipped), the tensor's name
// captured for the failure message; returns how many tensors are sigma.
template <class Check>
int each_element(const ParamTable& table, Check check) {
  int sigmas = 0;
  for (const ParamEntry& e : table.entries()) {
    CAPTURE(e.name);
    sigmas += e.is_sigma();
    for (int64_t i = e.offset; i < e.offset + e.numel; ++i) check(e, size_t(i));
  }
  return sigmas;
}

TEST_CASE("train: optim.sigma_lr_scale moves sigma that many times as far; every other parameter the same bits") {
  Config c = tiny_config(AttentionKind::rfa_gate);
  c.optim.warmup_steps = 0;
  Config c10 = c;
  c10.optim.sigma_lr_scale = 10;
  const auto [one, table] = params_after(c, 1);
  const auto [ten, table_ten] = params_after(c10, 1);
  const int sigmas = each_element(table, [&](const ParamEntry& e, size_t j) {
    if (!e.is_sigma()) {
      REQUIRE(one[j] == ten[j]);
    } else {  // Adam's first step is lr * sign(g) (bias-corrected): sigma starts at sigma_init
      const double d1 = std::abs(one[j] - c.attention.sigma_init);
      const double d10 = std::abs(ten[j] - c.attention.sigma_init);
      if (d1 > 0) REQUIRE(d10 == doctest::Approx(10 * d1).epsilon(1e-3));
    }
  });
  CHECK(sigmas == c.model.n_layers);
}

TEST_CASE("train: optim.sigma_floor raises |sigma| to the floor on its ramp, sign kept; every other parameter the same bits") {
  Config c = tiny_config(AttentionKind::rfa_gate);
  c.optim.warmup_steps = 0;  // lr 1e-2 from the first step: sigma stays within 1 +- 0.03 over 2 steps
  Config whole = c, ramp = c;
  whole.optim.sigma_floor = ramp.optim.sigma_floor = 3;
  ramp.optim.sigma_floor_steps = 4;  // floor 0.75 after the first update, 1.5 after the second
  // One sigma starts negative: the floor keeps its sign (the kernel depends on sigma squared).
  auto negative_first = [](Model<float>& m) { m.params()[m.table.get("layers.0.attn.sigma").offset] = -1.0f; };
  const auto [free1, table] = params_after(c, 1, negative_first);
  const auto [whole1, t1] = params_after(whole, 1, negative_first);
  const auto [ramp1, t2] = params_after(ramp, 1, negative_first);
  const auto [free2, t3] = params_after(c, 2, negative_first);
  const auto [ramp2, t4] = params_after(ramp, 2, negative_first);
  const size_t first = size_t(table.get("layers.0.attn.sigma").offset);
  const int sigmas = each_element(table, [&](const ParamEntry& e, size_t j) {
    REQUIRE(ramp1[j] == free1[j]);  // a floor of 0.75 is below every |sigma|
    if (!e.is_sigma()) {
      REQUIRE(whole1[j] == free1[j]);
      REQUIRE(ramp2[j] == free2[j]);
    } else {
      REQUIRE(std::abs(free2[j]) > 0.9);
      REQUIRE(whole1[j] == (j == first ? -3.0f : 3.0f));
      REQUIRE(ramp2[j] == (j == first ? -1.5f : 1.5f));
    }
  });
  CHECK(sigmas == c.model.n_layers);
}
