#pragma once
// One training run's in-memory state: the float model, its activations for
// (B, T), AdamW's m and v (same flat layout as the parameters), the decay mask
// and the batch buffers. Everything is allocated in the constructor, except the
// evaluation decoder, built at the first evaluate(); step() and later
// evaluate() calls do not allocate.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/batch_sampler.h"
#include "data/example_sampler.h"
#include "data/stream_sampler.h"
#include "decode/decoder.h"
#include "eval/example_nll.h"
#include "eval/perplexity.h"
#include "model/activations.h"
#include "model/model.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "tensor/arena.h"
#include "train/batch_shards.h"

namespace rfa {

struct StepStats {
  int64_t step = 0;        // 0-based optimizer step just taken
  double loss = 0;         // mean training loss over the step's micro-batches
  double grad_norm = 0;    // global norm before clipping
  double lr = 0;
  int64_t tokens = 0;      // tokens processed by all ranks (B * T * grad_accum * ranks)
  int64_t supervised = 0;  // instruction examples: the targets the step trained on (all ranks)
  // Wall time by phase: random draw + bf16 weight copies (bf16 runs), forwards, backwards, gradient all-reduce
  // (0 with one rank; includes waiting for the slowest rank), clip + AdamW.
  double setup_ms = 0, forward_ms = 0, backward_ms = 0, allreduce_ms = 0, optimizer_ms = 0;
  // A stop request (core/stop_signals.h) came before the step's last micro-batch: the
  // step was abandoned before its update, parameters and AdamW moments are untouched,
  // and redoing the step later gives the same result (batches are keyed by step).
  // One rank only: with several, the ranks agree on a stop after the step.
  bool stopped = false;
};

// Throws Error naming the key and its fix when train.precision is bf16 on a CPU without
// AVX512-BF16 (TrainSession checks it too; train_preflight asks first, before any data is prepared).
void train_precision_require(Precision precision);

// Where a session's weights come from: drawn from config.train.seed, or loaded from a checkpoint
// right after construction (a resume, a fine-tune), which overwrites every parameter and fixed
// random matrix (checkpoint_load checks that the file holds each): drawing them first would only be
// thrown away (1.6-2 s of a 91M-parameter model's resume on two threads). Until loaded they are zero.
enum class SessionWeights { drawn, loaded_after };

class TrainSession {
 public:
  // spec.V must be resolved (from the tokenizer).
  TrainSession(const Config& config, const ModelSpec& spec, SessionWeights weights = SessionWeights::drawn);

  // One optimizer step over grad_accum micro-batches from `sampler` keyed by (seed, step, micro);
  // with several ranks (dist/dist.h), this rank's share of the global batch, the gradients
  // all-reduced before clipping and AdamW, which every rank runs on identical weights.
  // `step` is 0-based. Throws Error naming the step (1-based, as the logs count: step + 1) and the
  // first non-finite tensor if the loss or a gradient is NaN/inf.
  // Polls stop_requested() before each micro-batch with one rank (see StepStats::stopped).
  StepStats step(int64_t step, const BatchSampler& sampler);
  // train.stateful: the same step over `streams` (built with ranks x grad_accum micro-batches),
  // local micro-batch m starting from carry_state()'s slot m; when the step completes (not
  // when it is dropped at a stop request), each slot holds the final states it left.
  StepStats step(int64_t step, const StreamSampler& streams);
  // Instruction examples (built with ranks x grad_accum micro-batches): the loss is the mean
  // over every target the whole step trains on (step_loss_weight), not a mean of per-micro-batch
  // means, so how a step splits into micro-batches and ranks does not weigh its examples.
  StepStats step(int64_t step, const ExampleSampler& examples);
  // Preference pairs (data.format preference, `pairs` built with ExampleLayout::pairs): one DPO
  // step (train/dpo.h) against `reference`, (units, 2): the answers' log-probabilities under the
  // frozen reference (dpo_logprobs of the initial weights). Under the fixed random matrices,
  // as the reference was computed, so that at the first step the policy is exactly it.
  StepStats step(int64_t step, const ExampleSampler& pairs, const std::vector<double>& reference);
  // Each unit's two answers' log-probabilities under the current weights, as a DPO step computes
  // them: (units, 2). Changes no training state.
  std::vector<double> dpo_logprobs(const ExampleSampler& pairs);

  // Validation loss: the mean NLL per token of every target of `tokens` (N >= 2),
  // computed exactly as `rfa eval perplexity` computes it (eval/perplexity.h, default
  // options): RFA kinds in one pass carrying the state, softmax in sliding windows of
  // the training context; the fixed random matrices. Changes no training state.
  // Polls stop_requested() between segments/windows and returns NaN if it cut the pass short.
  // `starts`: where documents begin in tokens (data.document_boundaries reset), the decoder
  // restarting at each; empty: one text.
  double evaluate(std::span<const int32_t> tokens, std::span<const int64_t> starts = {});
  // The plan evaluate() follows for a text of `tokens` tokens (for the log).
  PerplexityPlan eval_plan(int64_t tokens) const;
  // Instruction examples: each of `set` scored alone (eval/example_nll.h), those of more than
  // context_length + 1 tokens skipped as in training. The fixed random matrices; changes no
  // training state; the decoder is built at the first call. Polls stop_requested().
  ExampleNll evaluate_examples(const ExampleSet& set, std::vector<double>* logprobs = nullptr);

  Model<float>& model() { return model_; }
  const Config& config() const { return config_; }
  float* adam_m() { return optim_.data(); }                            // (P)
  float* adam_v() { return optim_.data() + model_.param_size(); }      // (P)
  int64_t steps_taken() const { return steps_taken_; }
  // The activation arenas (the shards' together under the batch split).
  int64_t activation_bytes() const { return acts_ ? acts_->bytes() : shards_->activation_bytes(); }
  int64_t grad_copy_bytes() const { return shards_ ? shards_->copy_bytes() : 0; }  // the batch split's copies
  ThreadSplit thread_split() const { return shards_ ? ThreadSplit::batch : ThreadSplit::kernels; }
  int64_t optimizer_bytes() const { return optim_.size() * static_cast<int64_t>(sizeof(float)); }
  void set_steps_taken(int64_t n) { steps_taken_ = n; }  // for resume: AdamW's t = n + 1

  // train.stateful: the states the next step's micro-batches enter with, (grad_accum, L, B, H,
  // F, Dh+1): slot m (carry_slot() elements, ModelCarry's layout) is local micro-batch m's.
  // Empty (null, 0) otherwise. Written by resume and read for checkpoints.
  float* carry_state() { return carry_in_; }
  int64_t carry_slot() const { return carry_slot_; }
  // The random matrices the stateful step `step` runs under (fixed, or the draw it shares).
  uint64_t stateful_draw_step(int64_t step) const;
  int64_t carry_position(int64_t step) const;  // stateful: the time discount's t of the step's first token
  const uint8_t* segment_starts() const;  // the batch's document starts when the attention restarts there, else null

 private:
  [[noreturn]] void fail_non_finite(int64_t step_index, const char* what);  // step_index 0-based
  template <typename Sampler>
  StepStats step_with(int64_t step, const Sampler& sampler, bool stateful);
  void bf16_prepare();  // creates the bf16 products' primitives (kernels/gemm_bf16.h) before any step
  // The end of every step once this rank's gradients are in: the all-reduce of the gradients and
  // of `loss` (this rank's share of the step's loss), clipping, AdamW; fills st's loss, norm, lr,
  // timings and tokens.
  void step_update(StepStats& st, int64_t step, double loss);
  // optim.sigma_floor after update number `taken` (1 for the first): |sigma| raised to the floor.
  void sigma_floor_apply(int64_t taken);
  // The answer log-probability of each row of the last forward (dpo_logp_): minus the sum of
  // its trained targets' losses.
  void row_logprobs();
  // The forward and backward of the micro-batch in batch_, the kernel split's or the batch split's.
  double forward(const float* random, const ModelCarry<float>& carry);
  void backward(const float* random, double loss_scale, GradWrite write);

  Config config_;
  Model<float> model_;
  // Exactly one of the two (train.thread_split, train/thread_split.h): the whole batch's
  // activations, every kernel split over the threads; or each thread its own rows.
  std::unique_ptr<Activations<float>> acts_;
  std::unique_ptr<BatchShards> shards_;
  Arena<float> optim_;  // (2P): m then v
  DecayMask mask_;
  std::vector<NamedRange> ranges_;  // parameter names over the flat layout, for error messages
  std::vector<NamedRange> sigma_ranges_;  // the RFA kinds' sigma tensors (optim.sigma_floor)
  TokenBatch batch_;
  int64_t steps_taken_ = 0;
  // train.stateful: (2, grad_accum, L, B, H, F, Dh+1): the entering states and the step's
  // final states, swapped when a step completes.
  Arena<float> carry_;
  int64_t carry_slot_ = 0;  // every layer's attention_carry_size(B)
  float* carry_in_ = nullptr;
  float* carry_out_ = nullptr;
  // evaluate()'s decoder (B = 1) and the plan it was built for; rebuilt only when the plan changes.
  std::unique_ptr<Decoder<float>> eval_decoder_;
  PerplexityPlan eval_decoder_plan_;
  std::unique_ptr<Decoder<float>> example_decoder_;  // evaluate_examples()'s
  std::vector<int32_t> example_scratch_;
  // Preference pairs: each row's answer log-probability (B) and the targets' DPO weights (B, T).
  std::vector<double> dpo_logp_;
  std::vector<double> dpo_weights_;
};

// Micro-batch m's loss enters a step of instruction examples with weight c_m / C: model_forward
// gives the mean over its c_m trained targets, and C = sum of c_m over the step's micro-batches
// (all ranks), so sum_m (c_m / C) mean_m is the mean over the step's C targets, and
// model_backward with loss_scale c_m / C gives every target the weight 1 / C.
inline double step_loss_weight(int64_t micro_targets, int64_t step_targets) {
  return static_cast<double>(micro_targets) / static_cast<double>(step_targets);
}

}  // namespace rfa
