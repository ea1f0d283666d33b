// Training on instruction examples (docs/fine-tuning.md): the step's loss is the mean over
// every target the step trains on, with a gradient check of that masked mean in double; the
// same rows split as grad_accum 4 x batch 1 or grad_accum 1 x batch 4 give the same step;
// the ids at masked positions cannot change anything; validation scores each example alone,
// as training sees it; a stopped and resumed run is bit-identical.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "config/config_enums.h"
#include "model/model_forward.h"
#include "support/examples.h"
#include "support/gradcheck.h"
#include "support/model_gradcheck.h"
#include "support/resume_round_trip.h"
#include "support/temp_dir.h"
#include "support/tiny_model.h"
#include "support/train_fixtures.h"
#include "train/train_session.h"

using namespace rfa;

namespace {

Config examples_config(AttentionKind kind, int batch, int grad_accum) {
  Config c = test::train_config_saved(kind);
  c.data.format = DataFormat::alpaca;
  c.train.batch_size = batch;
  c.train.grad_accum = grad_accum;
  c.train.steps = 8;
  c.train.seed = 3;
  c.optim.lr = 1e-2;
  c.optim.warmup_steps = 2;
  c.optim.grad_clip = 0;  // the gradients compared are the raw ones
  return c;
}

ExampleSampler sampler_for(const test::Examples& ex, const Config& c, Packing packing, int32_t pad_id = test::kEos) {
  ExampleLayout layout{.packing = packing,
                       .batch_size = c.train.batch_size,
                       .context_length = c.model.context_length,
                       .train_on_prompt = false,
                       .pad_id = pad_id};
  return ExampleSampler(ex.split(), ex.docs(), 0, ex.size(), layout, c.train.seed, c.train.grad_accum);
}

std::vector<float> grads_of(TrainSession& s) {
  return std::vector<float>(s.model().grads(), s.model().grads() + s.model().param_size());
}

}  // namespace

TEST_CASE("examples gradcheck: the masked mean over a step's micro-batches, in double") {
  // L = (sum over every trained target of both micro-batches of its NLL) / C, written here from
  // the per-target losses alone; the analytic gradient is what TrainSession::step computes:
  // model_backward of micro-batch m with loss_scale step_loss_weight(c_m, C).
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate}) {
    CAPTURE(enum_name(kind));
    const ModelSpec spec = test::gradcheck_spec(kind);
    Model<double> model(spec);
    model_init(model, 5);
    Activations<double> acts(spec, 2, 5);
    const std::vector<int32_t> inputs[2] = {{1, 4, 9, 0, 3, 10, 2, 2, 7, 5}, {6, 6, 1, 8, 2, 3, 9, 4, 4, 0}};
    // 7 and 2 trained targets: a mean of the two micro-batches' means would weigh them alike.
    const std::vector<int32_t> targets[2] = {{4, 9, -1, 3, 6, -1, 2, 7, 5, 8}, {-1, -1, 8, -1, -1, -1, 4, -1, -1, -1}};
    int64_t counts[2], C = 0;
    for (int m = 0; m < 2; ++m) C += counts[m] = std::count_if(targets[m].begin(), targets[m].end(), [](int32_t t) {
                                      return t >= 0;
                                    });
    const double* random = model.random_fixed();
    for (int m = 0; m < 2; ++m) {
      model_forward(model, acts, inputs[m].data(), targets[m].data(), random);
      model_backward(model, acts, inputs[m].data(), targets[m].data(), random, step_loss_weight(counts[m], C),
                     m == 0 ? GradWrite::overwrite : GradWrite::accumulate);
    }
    auto loss = [&] {
      double sum = 0;
      for (int m = 0; m < 2; ++m) {
        model_forward(model, acts, inputs[m].data(), targets[m].data(), random);
        for (size_t i = 0; i < targets[m].size(); ++i)
          if (targets[m][i] >= 0) sum += acts.losses[i];
      }
      return sum / static_cast<double>(C);
    };
    test::check_model_gradient(model, loss);
  }
}

TEST_CASE("examples: grad_accum 4 x batch 1 is grad_accum 1 x batch 4 on examples of different lengths") {
  const test::Examples ex = test::examples_random(40, 16, 7);
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa, AttentionKind::rfa_gate})
    for (Packing packing : {Packing::pad, Packing::pack}) {
      CAPTURE(enum_name(kind));
      CAPTURE(enum_name(packing));
      const Config a = examples_config(kind, 1, 4), b = examples_config(kind, 4, 1);
      const ExampleSampler sa = sampler_for(ex, a, packing), sb = sampler_for(ex, b, packing);
      TrainSession accumulated(a, model_spec_make(a.model, a.attention)), batched(b, model_spec_make(b.model, b.attention));
      // The step after a few others, so its rows hold examples of many lengths: the same
      // weights first (one session's state copied over), then one step each.
      for (int64_t step = 0; step < 3; ++step) accumulated.step(step, sa);
      std::copy(accumulated.model().params(), accumulated.model().params() + accumulated.model().param_size(),
                batched.model().params());
      const StepStats x = accumulated.step(3, sa), y = batched.step(3, sb);
      CHECK(x.supervised == y.supervised);
      CHECK(x.loss == doctest::Approx(y.loss).epsilon(1e-6));
      const std::vector<float> gx = grads_of(accumulated), gy = grads_of(batched);
      test::check_close("gradients", gx.data(), gy.data(), gx.size(), 1e-4, 1e-8);
    }
}

TEST_CASE("examples: the ids at masked positions change neither the loss nor any gradient, bit for bit") {
  // Padding's inputs and targets are the pad id: rows padded with another id must train identically.
  const test::Examples ex = test::examples_random(30, 16, 2);
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa, AttentionKind::rfa_gate})
    for (Packing packing : {Packing::pad, Packing::pack}) {
      CAPTURE(enum_name(kind));
      CAPTURE(enum_name(packing));
      const Config c = examples_config(kind, 3, 2);
      const ExampleSampler eos = sampler_for(ex, c, packing), other = sampler_for(ex, c, packing, 13);
      TrainSession a(c, model_spec_make(c.model, c.attention)), b(c, model_spec_make(c.model, c.attention));
      for (int64_t step = 0; step < 3; ++step) {
        const StepStats x = a.step(step, eos), y = b.step(step, other);
        CHECK(x.loss == y.loss);
        const std::vector<float> ga = grads_of(a), gb = grads_of(b);
        CHECK(std::memcmp(ga.data(), gb.data(), ga.size() * sizeof(float)) == 0);
      }
      CHECK(std::equal(a.model().params(), a.model().params() + a.model().param_size(), b.model().params()));
    }
}

TEST_CASE("examples: validation scores each example alone, as a padded row trains it") {
  const test::Examples ex = test::examples_random(12, 16, 4);
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate}) {
    CAPTURE(enum_name(kind));
    const Config c = examples_config(kind, 1, 1);
    TrainSession session(c, model_spec_make(c.model, c.attention));
    const ExampleNll r = session.evaluate_examples(ex.set(0, ex.size()));
    // The same numbers from the training forward: example d alone in a padded row.
    double response = 0, prompt = 0;
    int64_t response_n = 0, prompt_n = 0;
    Activations<float> acts(session.model().spec, 1, c.model.context_length);
    for (int64_t d = 0; d < ex.size(); ++d) {
      const ExampleSampler one(ex.split(), ex.docs(), d, 1, {.packing = Packing::pad, .batch_size = 1,
                                                              .context_length = c.model.context_length,
                                                              .train_on_prompt = true}, 1, 1);
      TokenBatch batch(1, c.model.context_length);
      one.sample(0, 0, batch);
      model_forward(session.model(), acts, batch.inputs.data(), batch.targets.data(), session.model().random_fixed());
      for (int t = 0; t < c.model.context_length; ++t)
        if (batch.roles[t] == static_cast<uint8_t>(TargetRole::response)) response += acts.losses[t], ++response_n;
        else if (batch.roles[t] == static_cast<uint8_t>(TargetRole::prompt)) prompt += acts.losses[t], ++prompt_n;
    }
    CHECK(r.examples == ex.size());
    CHECK(r.response_tokens == response_n);
    CHECK(r.prompt_tokens == prompt_n);
    CHECK(r.response_mean() == doctest::Approx(response / double(response_n)).epsilon(1e-5));
    CHECK(r.prompt_mean() == doctest::Approx(prompt / double(prompt_n)).epsilon(1e-5));
  }
}

TEST_CASE("examples: a run stopped, saved and resumed equals one that never stopped, bit for bit") {
  const test::Examples ex = test::examples_random(25, 16, 9);
  for (Packing packing : {Packing::pad, Packing::pack}) {
    CAPTURE(enum_name(packing));
    const Config c = examples_config(AttentionKind::rfa_gate, 2, 2);
    const ModelSpec spec = model_spec_make(c.model, c.attention);
    const ExampleSampler sampler = sampler_for(ex, c, packing);
    test::TempDir dir;
    TrainSession straight(c, spec), resumed(c, spec);
    for (int64_t i = 0; i < resumed.model().param_size(); ++i) resumed.model().params()[i] = 0.0f;
    const test::RoundTrip r = test::resume_round_trip(straight, resumed, sampler, dir.path(),
                                                      {.steps = 7, .save_after = 3, .val = nullptr});
    CHECK(r.got == r.want);
    CHECK(std::equal(straight.model().params(), straight.model().params() + straight.model().param_size(),
                     resumed.model().params()));
  }
}
