// A stop request (SIGTERM) seen by the training step: the step is abandoned before
// its update, nothing of it is applied, and taking it again later gives the very
// parameters and moments of a session that was never stopped.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/stop_signals.h"
#include "support/train_fixtures.h"
#include "train/train_session.h"

using namespace rfa;

namespace {

Config stop_config() {
  Config c = test::train_config(AttentionKind::rfa_gate, 16);
  c.train.batch_size = 2;
  c.train.grad_accum = 3;
  c.train.steps = 10;
  c.train.seed = 9;
  return c;
}

std::vector<float> state_of(TrainSession& s) {  // parameters, then m, then v
  const int64_t P = s.model().param_size();
  std::vector<float> out(s.model().params(), s.model().params() + P);
  out.insert(out.end(), s.adam_m(), s.adam_m() + P);
  out.insert(out.end(), s.adam_v(), s.adam_v() + P);
  return out;
}

void request_stop() {
  REQUIRE(kill(getpid(), SIGTERM) == 0);
  for (int i = 0; i < 1000 && !stop_requested(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(stop_requested());
}

}  // namespace

TEST_CASE("train stop: a requested stop drops the step whole; redoing it matches a session never stopped") {
  const Config c = stop_config();
  const ModelSpec spec = model_spec_make(c.model, c.attention);
  std::vector<uint16_t> tokens = test::random_tokens(2000, 4);
  TokenSplit split = test::split_of(tokens);
  BatchSampler sampler(split, c.train.batch_size, c.model.context_length, c.train.seed);

  TrainSession straight(c, spec);
  for (int64_t s = 0; s < 3; ++s) CHECK_FALSE(straight.step(s, sampler).stopped);

  TrainSession stopped(c, spec);
  stopped.step(0, sampler);
  const std::vector<float> after_one = state_of(stopped);
  {
    StopSignals signals;
    request_stop();
    const StepStats st = stopped.step(1, sampler);
    CHECK(st.stopped);
    CHECK(st.tokens == 0);
    CHECK(stopped.steps_taken() == 1);
    CHECK(state_of(stopped) == after_one);
    const std::vector<int32_t> val = split.to_vector();
    CHECK(std::isnan(stopped.evaluate(val)));  // the evaluation stops too
  }
  for (int64_t s = 1; s < 3; ++s) CHECK_FALSE(stopped.step(s, sampler).stopped);
  CHECK(state_of(stopped) == state_of(straight));
}
