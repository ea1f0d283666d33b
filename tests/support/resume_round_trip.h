#pragma once
// The checkpoint round trip the resume tests share: N steps straight in one
// session; k steps in another, a checkpoint saved the way train_run saves one,
// a fresh session loading it and N-k more steps. The caller owns the straight
// and the resumed session and asserts on them and on what this returns.
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "config/config_load.h"
#include "io/file_io.h"
#include "io/hash.h"
#include "model/model_io.h"
#include "train/train_resume.h"
#include "train/train_session.h"
#include "train/train_streams.h"

namespace rfa::test {

// Saves `session` after `step` steps into run_dir/checkpoints as train_run does: weights,
// AdamW moments, the gathered `streams` (stateful runs) if given, the state (step, seed,
// data position, the tokenizer's checksum), the config and a copy of `tokenizer`.
// Returns the checkpoint directory.
inline std::string session_save(TrainSession& session, const std::string& run_dir, int64_t step,
                                const std::string& tokenizer, const StreamCheckpoint* streams = nullptr) {
  const Config& c = session.config();
  CheckpointContents contents;
  contents.model = model_tensor_refs(session.model());
  contents.optimizer = optimizer_tensor_refs(session.model(), session.adam_m(), session.adam_v());
  if (streams) contents.streams = streams->refs();
  contents.state.step = step;
  contents.state.seed = c.train.seed;
  contents.state.data_position = step;
  contents.state.tokenizer_xxh64 = tokenizer_xxh64(tokenizer);
  contents.config_yaml = config_dump(c);
  contents.tokenizer_path = tokenizer;
  return checkpoint_save(run_dir + "/checkpoints", contents, c.checkpoint);
}

// Each loss of steps [from, to), then the loss on `val` if given.
template <typename Sampler>
std::vector<double> session_losses(TrainSession& session, const Sampler& sampler, int64_t from, int64_t to,
                                   const std::vector<int32_t>* val) {
  std::vector<double> losses;
  for (int64_t s = from; s < to; ++s) losses.push_back(session.step(s, sampler).loss);
  if (val) losses.push_back(session.evaluate(*val));
  return losses;
}

struct RoundTripPlan {
  int64_t steps = 0;                          // N
  int64_t save_after = 0;                     // k
  const std::vector<int32_t>* val = nullptr;  // evaluated before the save and after the last step
  // Applied to the first session before its first step, as the caller did to `straight`
  // (a fine-tune: its parent's weights); null = the sessions' own init.
  std::function<void(TrainSession&)> init = nullptr;
};

struct RoundTrip {
  std::vector<double> want;  // N steps straight: each loss, then the loss on val
  std::vector<double> got;   // k steps in a first session, N-k in the resumed one, then the loss on val
  std::string checkpoint;    // the first session's, saved after k steps
  TrainState loaded;         // what resume_load returned
};

// With a StreamSampler (a stateful run) the checkpoint holds the streams' offsets and
// states and `resumed` loads them. The first session evaluates `val` before it saves, as
// a run does when an evaluation falls on a checkpoint: evaluating must change nothing.
// The stand-in tokenizer is run_dir/tok.model.
template <typename Sampler>
RoundTrip resume_round_trip(TrainSession& straight, TrainSession& resumed, const Sampler& sampler,
                            const std::string& run_dir, const RoundTripPlan& plan) {
  constexpr bool stateful = std::is_same_v<Sampler, StreamSampler>;
  RoundTrip r;
  r.want = session_losses(straight, sampler, 0, plan.steps, plan.val);
  const std::string tokenizer = run_dir + "/tok.model";
  file_write_durable(tokenizer, "stand-in tokenizer bytes");
  {
    const Config& c = straight.config();
    TrainSession first(c, model_spec_make(c.model, c.attention));
    if (plan.init) plan.init(first);
    r.got = session_losses(first, sampler, 0, plan.save_after, nullptr);
    if (plan.val) first.evaluate(*plan.val);
    if constexpr (stateful) {
      StreamCheckpoint ck(first, sampler);
      ck.gather(plan.save_after);
      r.checkpoint = session_save(first, run_dir, plan.save_after, tokenizer, &ck);
    } else {
      r.checkpoint = session_save(first, run_dir, plan.save_after, tokenizer);
    }
  }
  if constexpr (stateful) {
    StreamCheckpoint ck(resumed, sampler);
    r.loaded = resume_load(resumed, r.checkpoint, &ck);
  } else {
    r.loaded = resume_load(resumed, r.checkpoint);
  }
  for (double loss : session_losses(resumed, sampler, plan.save_after, plan.steps, plan.val)) r.got.push_back(loss);
  return r;
}

}  // namespace rfa::test
