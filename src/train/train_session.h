#pragma once
// One training run's in-memory state: the float model, its activations for
// (B, T), AdamW's m and v (same flat layout as the parameters), the decay mask
// and the batch buffers. Everything is allocated in the constructor; step()
// and evaluate() do not allocate (evaluate's window iterator aside).
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/batch_sampler.h"
#include "model/activations.h"
#include "model/model.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "tensor/arena.h"

namespace rfa {

struct StepStats {
  int64_t step = 0;        // 0-based optimizer step just taken
  double loss = 0;         // mean training loss over the step's micro-batches
  double grad_norm = 0;    // global norm before clipping
  double lr = 0;
  int64_t tokens = 0;      // tokens processed by all ranks (B * T * grad_accum * ranks)
  // Wall time by phase: random draw + zero-grad, forwards, backwards, gradient all-reduce
  // (0 with one rank; includes waiting for the slowest rank), clip + AdamW.
  double setup_ms = 0, forward_ms = 0, backward_ms = 0, allreduce_ms = 0, optimizer_ms = 0;
};

class TrainSession {
 public:
  // spec.V must be resolved (from the tokenizer). Initialises the model from config.train.seed.
  TrainSession(const Config& config, const ModelSpec& spec);

  // One optimizer step over grad_accum micro-batches from `sampler` keyed by (seed, step, micro);
  // with several ranks (dist/dist.h), this rank's share of the global batch, the gradients
  // all-reduced before clipping and AdamW, which every rank runs on identical weights.
  // `step` is 0-based. Throws Error naming the step (1-based, as the logs count: step + 1) and the
  // first non-finite tensor if the loss or a gradient is NaN/inf.
  StepStats step(int64_t step, const BatchSampler& sampler);

  // Mean loss over the first eval_batches * B windows of `split`, with the fixed random matrices.
  double evaluate(const TokenSplit& split, int eval_batches);

  Model<float>& model() { return model_; }
  const Config& config() const { return config_; }
  float* adam_m() { return optim_.data(); }                            // (P)
  float* adam_v() { return optim_.data() + model_.param_size(); }      // (P)
  int64_t steps_taken() const { return steps_taken_; }
  void set_steps_taken(int64_t n) { steps_taken_ = n; }  // for resume: AdamW's t = n + 1

 private:
  [[noreturn]] void fail_non_finite(int64_t step_index, const char* what);  // step_index 0-based

  Config config_;
  Model<float> model_;
  Activations<float> acts_;
  Arena<float> optim_;  // (2P): m then v
  DecayMask mask_;
  std::vector<NamedRange> ranges_;  // parameter names over the flat layout, for error messages
  TokenBatch batch_;
  int64_t steps_taken_ = 0;
};

}  // namespace rfa
