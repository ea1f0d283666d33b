// Stateful training (train.stateful): the states a step's micro-batches leave are the
// ones the next step enters with (checked against an independent forward of the
// same batch from the same weights), the random features are the fixed set or a
// draw kept for K steps with the states reset at each new draw, and a resume from a
// checkpoint holding the streams and states continues bit for bit (tests/e2e/
// stateful_resume.sh: across processes and a SIGTERM; mpi_stateful.sh: 2 MPI ranks).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "attention/attention_core.h"
#include "checkpoint/checkpoint.h"
#include "core/error.h"
#include "model/model_forward.h"
#include "model/model_io.h"
#include "support/resume_round_trip.h"
#include "support/temp_dir.h"
#include "support/train_fixtures.h"
#include "train/train_resume.h"
#include "train/train_session.h"
#include "train/train_streams.h"

using namespace rfa;

namespace {

using test::random_tokens;
using test::split_of;

Config stateful_config(int redraw) {
  Config c = test::train_config_saved(AttentionKind::rfa_gate);
  c.model.init_std = 0.1;
  c.train.batch_size = 3;
  c.train.grad_accum = 2;
  c.train.steps = 10;
  c.train.seed = 8;
  c.train.stateful = true;
  c.train.stateful_redraw = redraw;
  c.optim.lr = 1e-2;
  c.optim.warmup_steps = 2;
  return c;
}

bool same(const float* a, const float* b, int64_t n) { return std::equal(a, a + n, b); }

// The final states of local micro-batch `micro` of step `step`, computed apart from the
// session: its weights before the step (params), the states it entered with (null =
// empty) and the random matrices the step runs under.
std::vector<float> final_states(const Config& c, const std::vector<float>& params, const float* entering,
                                const float* random, const StreamSampler& streams, int64_t step, int micro,
                                int64_t pos0 = 0) {
  const ModelSpec spec = model_spec_make(c.model, c.attention);
  Model<float> model(spec);
  std::copy(params.begin(), params.end(), model.params());
  Activations<float> acts(spec, c.train.batch_size, c.model.context_length);
  TokenBatch batch(c.train.batch_size, c.model.context_length);
  streams.sample(step, micro, batch);
  std::vector<float> out(size_t(spec.L) * attention_carry_size(spec.attn, c.train.batch_size));
  model_forward(model, acts, batch.inputs.data(), batch.targets.data(), random, {entering, out.data(), pos0});
  return out;
}

}  // namespace

TEST_CASE("stateful: step s+1 enters with the states step s left, under the fixed random features") {
  const Config c = stateful_config(0);
  const ModelSpec spec = model_spec_make(c.model, c.attention);
  std::vector<uint16_t> tokens = random_tokens(4000, 5);
  const TokenSplit split = split_of(tokens);
  const StreamSampler streams(split, c.train.batch_size, c.model.context_length, c.train.grad_accum);
  TrainSession session(c, spec);
  const int64_t slot = session.carry_slot(), P = session.model().param_size();
  REQUIRE(slot == spec.L * attention_carry_size(spec.attn, c.train.batch_size));
  for (int64_t step = 0; step < 4; ++step) {
    CAPTURE(step);
    const std::vector<float> params(session.model().params(), session.model().params() + P);
    const std::vector<float> entering(session.carry_state(), session.carry_state() + 2 * slot);
    session.step(step, streams);
    for (int m = 0; m < c.train.grad_accum; ++m) {
      CAPTURE(m);
      const std::vector<float> want = final_states(c, params, entering.data() + m * slot,
                                                   session.model().random_fixed(), streams, step, m);
      CHECK(same(session.carry_state() + m * slot, want.data(), slot));
      if (step > 0) {  // the entering state mattered: from empty states the step ends elsewhere
        const std::vector<float> fresh =
            final_states(c, params, nullptr, session.model().random_fixed(), streams, step, m);
        CHECK(!same(session.carry_state() + m * slot, fresh.data(), slot));
      }
    }
  }
}

TEST_CASE("stateful: with the time discount each step continues its states' positions") {
  // t of a step's first token = tokens the states took in since they were last empty:
  // step x T under the fixed features, (step mod K) x T with a redraw every K steps.
  for (int redraw : {0, 3}) {
    CAPTURE(redraw);
    Config c = stateful_config(redraw);
    c.attention.time_discount = TimeDiscountKind::log;
    const ModelSpec spec = model_spec_make(c.model, c.attention);
    std::vector<uint16_t> tokens = random_tokens(4000, 7);
    const TokenSplit split = split_of(tokens);
    const StreamSampler streams(split, c.train.batch_size, c.model.context_length, c.train.grad_accum);
    TrainSession session(c, spec);
    const int64_t slot = session.carry_slot(), P = session.model().param_size(), T = c.model.context_length;
    std::vector<float> random(size_t(session.model().random_size));
    for (int64_t step = 0; step < 5; ++step) {
      CAPTURE(step);
      const int64_t pos0 = redraw == 0 ? step * T : step % redraw * T;
      CHECK(session.carry_position(step) == pos0);
      const std::vector<float> params(session.model().params(), session.model().params() + P);
      const std::vector<float> entering(session.carry_state(), session.carry_state() + 2 * slot);
      session.step(step, streams);
      const float* r = session.model().random_fixed();
      if (redraw != 0) {
        model_draw_random(spec, c.train.seed, uint64_t(step / redraw * redraw), random.data());
        r = random.data();
      }
      const float* in = redraw != 0 && step % redraw == 0 ? nullptr : entering.data();
      const std::vector<float> want = final_states(c, params, in, r, streams, step, 0, pos0);
      CHECK(same(session.carry_state(), want.data(), slot));
      if (pos0 > 0) {  // the position mattered: counted from 0 the step ends elsewhere
        const std::vector<float> from0 = final_states(c, params, in, r, streams, step, 0, 0);
        CHECK(!same(session.carry_state(), from0.data(), slot));
      }
    }
  }
}

TEST_CASE("stateful: with stateful_redraw K a draw serves K steps and the states restart empty at each draw") {
  const Config c = stateful_config(3);
  const ModelSpec spec = model_spec_make(c.model, c.attention);
  std::vector<uint16_t> tokens = random_tokens(4000, 6);
  const TokenSplit split = split_of(tokens);
  const StreamSampler streams(split, c.train.batch_size, c.model.context_length, c.train.grad_accum);
  TrainSession session(c, spec);
  const int64_t slot = session.carry_slot(), P = session.model().param_size();
  std::vector<float> random(size_t(session.model().random_size));
  for (int64_t step = 0; step < 7; ++step) {
    CAPTURE(step);
    CHECK(session.stateful_draw_step(step) == uint64_t(step / 3 * 3));
    const std::vector<float> params(session.model().params(), session.model().params() + P);
    const std::vector<float> entering(session.carry_state(), session.carry_state() + 2 * slot);
    session.step(step, streams);
    model_draw_random(spec, c.train.seed, uint64_t(step / 3 * 3), random.data());
    const bool reset = step % 3 == 0;
    for (int m = 0; m < c.train.grad_accum; ++m) {
      const std::vector<float> want = final_states(c, params, reset ? nullptr : entering.data() + m * slot,
                                                   random.data(), streams, step, m);
      CHECK(same(session.carry_state() + m * slot, want.data(), slot));
    }
  }
}

TEST_CASE("stateful: k steps, a checkpoint with the streams, a fresh session and N-k steps equal N steps") {
  const Config c = stateful_config(0);
  const ModelSpec spec = model_spec_make(c.model, c.attention);
  std::vector<uint16_t> tokens = random_tokens(4000, 9);
  const TokenSplit split = split_of(tokens);
  const StreamSampler streams(split, c.train.batch_size, c.model.context_length, c.train.grad_accum);
  const std::vector<int32_t> val = split.to_vector();
  const int64_t k = 4;

  test::TempDir dir;
  TrainSession straight(c, spec), resumed(c, spec);
  const test::RoundTrip r =
      test::resume_round_trip(straight, resumed, streams, dir.path(), {.steps = 6, .save_after = k, .val = &val});
  CHECK(r.got == r.want);
  const int64_t P = straight.model().param_size();
  CHECK(same(straight.model().params(), resumed.model().params(), P));
  CHECK(same(straight.carry_state(), resumed.carry_state(), straight.carry_slot() * c.train.grad_accum));

  // The saved offsets are where each stream's step-k window starts.
  {
    const StreamCheckpoint ck(straight, streams);
    const LoadedCheckpoint loaded =
        checkpoint_load(r.checkpoint, model_tensor_specs(spec), optimizer_tensor_specs(spec), ck.specs());
    const Tensor* offsets = loaded.streams.find("stream.offsets");
    REQUIRE(offsets != nullptr);
    const auto* o = reinterpret_cast<const int64_t*>(offsets->bytes.data());
    for (int m = 0; m < c.train.grad_accum; ++m)
      for (int b = 0; b < c.train.batch_size; ++b)
        CHECK(o[m * c.train.batch_size + b] == streams.stream_begin(m, b) + k * c.model.context_length);
  }

  // Without the states (a fresh session's empty ones) the continuation differs: the file's states matter.
  TrainSession forgetful(c, spec);
  resume_load(forgetful, r.checkpoint);
  CHECK(forgetful.step(k, streams).loss != r.want[size_t(k)]);

  // Other token data cuts other streams: refused, naming the stream and both offsets.
  std::vector<uint16_t> shorter(tokens.begin(), tokens.begin() + 3000);
  const TokenSplit split2 = split_of(shorter);
  const StreamSampler streams2(split2, c.train.batch_size, c.model.context_length, c.train.grad_accum);
  TrainSession other(c, spec);
  StreamCheckpoint ck2(other, streams2);
  CHECK_THROWS_WITH_AS(resume_load(other, r.checkpoint, &ck2), doctest::Contains("the token data cuts it"), Error);
  // A checkpoint without stream.safetensors cannot resume a stateful run.
  std::filesystem::remove(r.checkpoint + "/stream.safetensors");
  TrainSession fourth(c, spec);
  StreamCheckpoint ck4(fourth, streams);
  CHECK_THROWS_WITH_AS(resume_load(fourth, r.checkpoint, &ck4), doctest::Contains("has no stream.safetensors"), Error);
}
