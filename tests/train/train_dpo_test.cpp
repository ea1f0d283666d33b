// DPO on preference pairs (train/dpo.h): a gradient check of the DPO loss in double through
// per-target weights; the first step, where the policy is its reference, has loss log 2; steps
// lower the training pairs' loss; a stopped and resumed run is bit-identical.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "config/config_enums.h"
#include "model/model_forward.h"
#include "support/examples.h"
#include "support/model_gradcheck.h"
#include "support/resume_round_trip.h"
#include "support/temp_dir.h"
#include "support/tiny_model.h"
#include "support/train_fixtures.h"
#include "train/dpo.h"
#include "train/train_session.h"

using namespace rfa;

namespace {

// Pairs as a token file lays them out: documents 2u (chosen) and 2u + 1 (rejected) share a prompt.
test::Examples pairs_random(int count, uint64_t seed) {
  CounterRng rng(seed, 0xD70);
  std::vector<std::pair<std::vector<uint16_t>, std::vector<uint16_t>>> parts;
  auto tokens = [&](int n) {
    std::vector<uint16_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = static_cast<uint16_t>(3 + rng.below(13));
    return t;
  };
  for (int i = 0; i < count; ++i) {
    const std::vector<uint16_t> prompt = tokens(1 + static_cast<int>(rng.below(4)));
    const std::vector<uint16_t> chosen = tokens(1 + static_cast<int>(rng.below(4)));
    parts.push_back({prompt, chosen});
    parts.push_back({prompt, tokens(static_cast<int>(rng.below(4)))});
  }
  return test::Examples(parts);
}

Config dpo_config(AttentionKind kind) {
  Config c = test::train_config_saved(kind);
  c.data.format = DataFormat::preference;
  c.train.batch_size = 4;  // two pairs per micro-batch
  c.train.grad_accum = 2;
  c.train.steps = 20;
  c.train.seed = 4;
  c.train.dpo_beta = 0.5;
  c.optim.lr = 1e-2;
  c.optim.warmup_steps = 1;
  return c;
}

ExampleSampler pair_sampler(const test::Examples& ex, const Config& c) {
  ExampleLayout layout{.packing = Packing::pad,
                       .batch_size = c.train.batch_size,
                       .context_length = c.model.context_length,
                       .pad_id = test::kEos,
                       .pairs = true};
  return ExampleSampler(ex.split(), ex.docs(), 0, ex.size(), layout, c.train.seed, c.train.grad_accum);
}

}  // namespace

TEST_CASE("dpo: the loss and its weights at the reference, and far from it") {
  const DpoTerms at = dpo_terms(-3, -5, -3, -5, 0.1);
  CHECK(at.z == 0);
  CHECK(at.loss == doctest::Approx(std::log(2.0)).epsilon(1e-15));
  CHECK(at.weight == doctest::Approx(0.05).epsilon(1e-15));
  const DpoTerms far = dpo_terms(0, -2000, 0, 0, 1.0);  // z = 2000: no overflow, loss and weight ~ 0
  CHECK(far.loss == doctest::Approx(0).epsilon(1e-12));
  CHECK(far.weight == doctest::Approx(0).epsilon(1e-12));
  const DpoTerms wrong = dpo_terms(-2000, 0, 0, 0, 1.0);  // z = -2000: loss ~ 2000, weight beta
  CHECK(wrong.loss == doctest::Approx(2000));
  CHECK(wrong.weight == doctest::Approx(1.0));
}

TEST_CASE("dpo gradcheck: the DPO loss of two pairs through per-target weights, in double") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate}) {
    CAPTURE(enum_name(kind));
    const ModelSpec spec = test::gradcheck_spec(kind);
    Model<double> model(spec);
    model_init(model, 6);
    const int B = 4, T = 5;  // rows: pair 0 chosen, rejected; pair 1 chosen, rejected
    Activations<double> acts(spec, B, T);
    const std::vector<int32_t> inputs = {1, 4, 9, 0, 3, 1, 4, 7, 7, 5, 6, 2, 8, 3, 3, 6, 2, 5, 9, 1};
    const std::vector<int32_t> targets = {-1, 9, 0, 3, -1, -1, 7, 7, 5, -1, -1, -1, 3, 3, 2, -1, -1, 9, 1, 4};
    const double reference[4] = {-9.5, -8.0, -6.2, -7.1}, beta = 0.7;
    auto logprob = [&](int row) {
      double sum = 0;
      for (int t = 0; t < T; ++t)
        if (targets[static_cast<size_t>(row * T + t)] >= 0) sum += acts.losses[static_cast<size_t>(row * T + t)];
      return -sum;
    };
    const double* random = model.random_fixed();
    // Analytic: the weights a DPO step gives each target (train_session.cpp), then the backward.
    model_forward(model, acts, inputs.data(), targets.data(), random);
    std::vector<double> weights(static_cast<size_t>(B * T));
    for (int p = 0; p < 2; ++p) {
      const DpoTerms d = dpo_terms(logprob(2 * p), logprob(2 * p + 1), reference[2 * p], reference[2 * p + 1], beta);
      for (int t = 0; t < T; ++t) {
        weights[static_cast<size_t>(2 * p * T + t)] = d.weight / 2;
        weights[static_cast<size_t>((2 * p + 1) * T + t)] = -d.weight / 2;
      }
    }
    model_backward_weighted(model, acts, inputs.data(), targets.data(), random, weights.data(), GradWrite::overwrite);
    // Numeric: the DPO loss itself, written from its definition.
    test::check_model_gradient(model, [&] {
      model_forward(model, acts, inputs.data(), targets.data(), random);
      double loss = 0;
      for (int p = 0; p < 2; ++p) {
        const double z = beta * ((logprob(2 * p) - reference[2 * p]) - (logprob(2 * p + 1) - reference[2 * p + 1]));
        loss += std::log1p(std::exp(-z));
      }
      return loss / 2;
    });
  }
}

TEST_CASE("dpo: the first step is at the reference (loss log 2); steps lower the loss on the training pairs") {
  const test::Examples ex = pairs_random(24, 3);
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa, AttentionKind::rfa_gate}) {
    CAPTURE(enum_name(kind));
    Config c = dpo_config(kind);
    c.optim.grad_clip = 0;  // the first step's gradient is compared as the backward left it
    const ExampleSampler pairs = pair_sampler(ex, c);
    REQUIRE(pairs.units() == 24);
    const ModelSpec spec = model_spec_make(c.model, c.attention);
    TrainSession session(c, spec);
    const std::vector<double> reference = session.dpo_logprobs(pairs);
    const StepStats first = session.step(0, pairs, reference);
    CHECK(first.loss == doctest::Approx(std::log(2.0)).epsilon(1e-9));  // the policy is its reference
    // That step's gradient is the gradient-checked one above: +beta/2 on each chosen answer's
    // targets, -beta/2 on each rejected one's, over the step's 4 pairs.
    Model<float> model(spec);
    model_init(model, c.train.seed);
    Activations<float> acts(spec, c.train.batch_size, c.model.context_length);
    TokenBatch batch(c.train.batch_size, c.model.context_length);
    std::vector<double> weights(static_cast<size_t>(c.train.batch_size) * c.model.context_length);
    for (int m = 0; m < c.train.grad_accum; ++m) {
      pairs.sample(0, m, batch);
      model_forward(model, acts, batch.inputs.data(), batch.targets.data(), model.random_fixed());
      for (size_t i = 0; i < weights.size(); ++i)
        weights[i] = (i / c.model.context_length % 2 == 0 ? 1 : -1) * c.train.dpo_beta / 2 / 4;
      model_backward_weighted(model, acts, batch.inputs.data(), batch.targets.data(), model.random_fixed(),
                              weights.data(), m == 0 ? GradWrite::overwrite : GradWrite::accumulate);
    }
    test::check_close("the first DPO step's gradient", session.model().grads(), model.grads(),
                      static_cast<size_t>(model.param_size()), 1e-5, 1e-9);
    for (int64_t s = 1; s < 20; ++s) session.step(s, pairs, reference);
    const std::vector<double> after = session.dpo_logprobs(pairs);
    double loss = 0;
    for (int64_t u = 0; u < pairs.units(); ++u)
      loss += dpo_terms(after[2 * u], after[2 * u + 1], reference[2 * u], reference[2 * u + 1], c.train.dpo_beta).loss;
    CHECK(loss / double(pairs.units()) < std::log(2.0) - 0.02);
  }
}

TEST_CASE("dpo: a run stopped, saved and resumed equals one that never stopped, bit for bit") {
  const test::Examples ex = pairs_random(16, 5);
  const Config c = dpo_config(AttentionKind::rfa_gate);
  const ModelSpec spec = model_spec_make(c.model, c.attention);
  const ExampleSampler pairs = pair_sampler(ex, c);
  test::TempDir dir;
  TrainSession straight(c, spec);
  const std::vector<double> reference = straight.dpo_logprobs(pairs);
  std::vector<double> want, got;
  for (int64_t s = 0; s < 6; ++s) want.push_back(straight.step(s, pairs, reference).loss);
  const std::string tokenizer = dir / "tok.model";
  file_write_durable(tokenizer, "stand-in tokenizer bytes");
  std::string checkpoint;
  {
    TrainSession first(c, spec);
    for (int64_t s = 0; s < 2; ++s) got.push_back(first.step(s, pairs, reference).loss);
    checkpoint = test::session_save(first, dir.path(), 2, tokenizer);
  }
  TrainSession resumed(c, spec);
  for (int64_t i = 0; i < resumed.model().param_size(); ++i) resumed.model().params()[i] = 0.0f;
  resume_load(resumed, checkpoint);
  for (int64_t s = 2; s < 6; ++s) got.push_back(resumed.step(s, pairs, reference).loss);
  CHECK(got == want);
  CHECK(std::equal(straight.model().params(), straight.model().params() + straight.model().param_size(),
                   resumed.model().params()));
}
