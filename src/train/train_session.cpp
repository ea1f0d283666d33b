#include "train/train_session.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/error.h"
#include "core/parallel.h"
#include "core/stop_signals.h"
#include "core/timer.h"
#include "dist/dist.h"
#include "kernels/bf16.h"
#include "model/model_forward.h"
#include "optim/lr_schedule.h"
#include "train/dpo.h"
#include "train/thread_split.h"

namespace rfa {
namespace {

DecayMask mask_from_table(const ParamTable& t, double sigma_lr_scale) {
  // Tensors and the padding between them tile [0, P); padding never decays.
  std::vector<DecayRange> ranges;
  int64_t pos = 0;
  for (const ParamEntry& e : t.entries()) {
    if (e.offset > pos) ranges.push_back({pos, e.offset - pos, false});
    ranges.push_back({e.offset, e.numel, e.decay, e.is_sigma() ? sigma_lr_scale : 1.0});
    pos = e.offset + e.numel;
  }
  if (t.size() > pos) ranges.push_back({pos, t.size() - pos, false});
  return decay_mask_build(std::move(ranges), t.size());
}

Precision precision_checked(Precision p) {
  train_precision_require(p);
  return p;
}

}  // namespace

void train_precision_require(Precision p) {
  if (p == Precision::bf16)
    bf16_require("train.precision bf16",
                 "set train.precision: fp32 on this machine (a resume switches with --set train.precision=fp32)");
}

TrainSession::TrainSession(const Config& config, const ModelSpec& spec, SessionWeights weights)
    : config_(config),
      model_(spec, precision_checked(config.train.precision)),
      optim_(2 * model_.param_size()),
      mask_(mask_from_table(model_.table, config.optim.sigma_lr_scale)),
      batch_(config.train.batch_size, spec.model.context_length) {
  if (config.train.stateful) {
    for (const AttentionSpec& a : spec.attn) {  // every layer's state, one after another
      RFA_ASSERT(attention_carry_size(a, 1) > 0, "train.stateful needs an RFA kind in every layer (config_validate)");
      carry_slot_ += attention_carry_size(a, config.train.batch_size);
    }
    carry_ = Arena<float>(2 * config.train.grad_accum * carry_slot_);
    carry_in_ = carry_.data();
    carry_out_ = carry_.data() + config.train.grad_accum * carry_slot_;
  }
  const int B = config.train.batch_size, T = spec.model.context_length, threads = thread_count();
  if (thread_split_resolve(config, spec, threads) == ThreadSplit::batch)
    shards_ = std::make_unique<BatchShards>(model_, B, T, config.train.precision, threads);
  else
    acts_ = std::make_unique<Activations<float>>(spec, B, T, config.train.precision);
  if (weights == SessionWeights::drawn) model_init(model_, config.train.seed);
  for (const ParamEntry& e : model_.table.entries()) {
    ranges_.push_back({e.name, e.offset, e.numel});
    if (e.is_sigma()) sigma_ranges_.push_back({e.name, e.offset, e.numel});
  }
  if (config_preference(config.data)) {
    dpo_logp_.resize(static_cast<size_t>(config.train.batch_size));
    dpo_weights_.resize(static_cast<size_t>(config.train.batch_size) * spec.model.context_length);
  }
  if (config.train.precision == Precision::bf16) bf16_prepare();
}

void TrainSession::bf16_prepare() {
  // One forward and backward on token 0 with each gradient write a step uses creates
  // every bf16 matmul primitive now, so that step() creates none. Touches only the
  // activations and the gradients, which a step's first micro-batch overwrites.
  model_.bf16_refresh();
  std::fill(batch_.inputs.begin(), batch_.inputs.end(), 0);
  std::fill(batch_.targets.begin(), batch_.targets.end(), 0);
  for (GradWrite write : {GradWrite::overwrite, GradWrite::accumulate}) {
    if (write == GradWrite::accumulate && config_.train.grad_accum == 1) break;
    forward(model_.random_fixed(), ModelCarry<float>{});
    backward(model_.random_fixed(), 1.0, write);
  }
}

double TrainSession::forward(const float* random, const ModelCarry<float>& carry) {
  if (shards_) {
    RFA_ASSERT(!carry.in && !carry.out, "the batch split carries no state (thread_split_resolve)");
    return shards_->forward(batch_.inputs.data(), batch_.targets.data(), random, carry.segment_start);
  }
  return model_forward(model_, *acts_, batch_.inputs.data(), batch_.targets.data(), random, carry);
}

void TrainSession::backward(const float* random, double loss_scale, GradWrite write) {
  if (shards_)
    shards_->backward(batch_.inputs.data(), batch_.targets.data(), random, loss_scale, write);
  else
    model_backward(model_, *acts_, batch_.inputs.data(), batch_.targets.data(), random, loss_scale, write);
}

void TrainSession::fail_non_finite(int64_t step_index, const char* what) {
  // Not the hot path: we are about to stop. Name the first tensor that went bad,
  // looking at activations in forward order, then gradients, then parameters.
  // The 0-based step being taken is shown 1-based, as the log lines and checkpoint
  // names count steps: "step 7" follows the log line "step 6/N" and checkpoint step-000006.
  const int64_t step = step_index + 1;
  const int parts = shards_ ? shards_->count() : 1;  // the batch's activations, or each thread's rows'
  for (int part = 0; part < parts; ++part) {
    Activations<float>& a = shards_ ? shards_->acts(part) : *acts_;
    const std::string rows =
        shards_ ? fmt::format(" (the batch's rows {}-{})", shards_->first_row(part),
                              shards_->first_row(part) + shards_->rows(part) - 1)
                : "";
    for (const ActTensor& t : a.tensors()) {
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      const float* p = a.tensor_data(t);
      for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(p[i]))
          fail("step {}: {} is not finite; first non-finite activation is {}[{}] = {}{}. Lower optim.lr or "
               "raise attention.denominator_floor",
               step, what, t.name, i, p[i], rows);
    }
  }
  if (auto bad = grad_find_non_finite(model_.grads(), model_.param_size(), ranges_))
    fail("step {}: {} is not finite; first non-finite gradient is {}[{}] = {}. Lower optim.lr or set "
         "optim.grad_clip",
         step, what, bad->name, bad->index, bad->value);
  if (auto bad = grad_find_non_finite(model_.params(), model_.param_size(), ranges_))
    fail("step {}: {} is not finite; parameter {}[{}] = {}", step, what, bad->name, bad->index, bad->value);
  fail("step {}: {} is not finite, but no activation, gradient or parameter is", step, what);
}

StepStats TrainSession::step(int64_t step, const BatchSampler& sampler) {
  RFA_ASSERT(!config_.train.stateful, "a stateful session steps over streams");
  return step_with(step, sampler, false);
}

StepStats TrainSession::step(int64_t step, const StreamSampler& streams) {
  RFA_ASSERT(config_.train.stateful, "streams need a stateful session (its carried states)");
  RFA_ASSERT(streams.micro_batches() == config_.train.grad_accum * dist_size() &&
                 streams.batch_size() == config_.train.batch_size,
             "streams ({} micro-batches of {}) do not match ranks x grad_accum x batch", streams.micro_batches(),
             streams.batch_size());
  return step_with(step, streams, true);
}

// Stateful runs and the random features (docs/long-context.md): a state built under one
// draw means nothing under another, so either the draw never changes (stateful_redraw 0:
// the fixed evaluation matrices, which evaluation reads too) or it is kept for K steps and
// the states restart empty with each new draw.
uint64_t TrainSession::stateful_draw_step(int64_t step) const {
  const int K = config_.train.stateful_redraw;
  return K == 0 ? kFixedRandomStep : static_cast<uint64_t>(step / K * K);
}

// The time discount's t of a stateful step's first token: the tokens every row's state has
// taken in since it was last empty (at step 0, or at the last redraw), as one pass over the
// same text would count them.
int64_t TrainSession::carry_position(int64_t step) const {
  const int K = config_.train.stateful_redraw;
  const int64_t since = K == 0 ? step : step % K;
  return since * model_.spec.model.context_length;
}

StepStats TrainSession::step(int64_t step, const ExampleSampler& examples) {
  RFA_ASSERT(!config_.train.stateful, "instruction examples carry no state");
  RFA_ASSERT(examples.micro_batches() == config_.train.grad_accum * dist_size(),
             "examples built for {} micro-batches, the step has ranks x grad_accum = {}", examples.micro_batches(),
             config_.train.grad_accum * dist_size());
  return step_with(step, examples, false);
}

template <typename Sampler>
StepStats TrainSession::step_with(int64_t step, const Sampler& sampler, bool stateful) {
  constexpr bool examples = std::is_same_v<Sampler, ExampleSampler>;
  const TrainConfig& tc = config_.train;
  const ModelSpec& s = model_.spec;
  StepStats st;
  Timer timer;
  // No zero_grad: the first micro-batch's backward overwrites every gradient.
  const float* random = model_.random_step();
  bool carry_reset = false;  // the states restart empty at this step (a new draw)
  if (!stateful) {
    model_draw_random(s, tc.seed, static_cast<uint64_t>(step), model_.random_step());  // none for softmax
  } else if (tc.stateful_redraw == 0) {
    random = model_.random_fixed();
  } else {
    model_draw_random(s, tc.seed, stateful_draw_step(step), model_.random_step());
    carry_reset = step % tc.stateful_redraw == 0;
  }
  // bf16: the weight copies follow the master weights as the last update (or an init
  // or a load) left them; refreshed here so nothing that changes the weights can miss it.
  model_.bf16_refresh();
  st.setup_ms = timer.ms();
  double loss_sum = 0;
  // Data parallel: this rank computes grad_accum of the step's ranks * grad_accum micro-batches
  // (batch_global_micro). Each is scaled by 1 / (ranks * grad_accum) here and the all-reduce
  // below sums them: the mean over the global batch. (Scaling before the sum equals scaling
  // after it when ranks * grad_accum is a power of two; otherwise it differs in the last bit.)
  const int rank = dist_rank(), ranks = dist_size();
  const double scale = 1.0 / (double(tc.grad_accum) * ranks);
  // Instruction examples: the step's trained targets over every rank's micro-batches (each rank
  // counts them all from the row layout: no communication), the normaliser of its loss.
  int64_t step_targets = 0;
  if constexpr (examples) step_targets = sampler.supervised_step(step);
  for (int micro = 0; micro < tc.grad_accum; ++micro) {
    // One rank may drop the step at a stop request; several ranks must all reach the
    // all-reduce, and agree on stopping after the step instead (train/train_dist.h).
    if (ranks == 1 && stop_requested()) {
      st.stopped = true;
      return st;
    }
    const int global_micro = batch_global_micro(rank, ranks, micro);
    sampler.sample(step, global_micro, batch_);
    double weight = scale;  // this micro-batch's share of the step's loss
    if constexpr (examples) weight = step_loss_weight(sampler.supervised(step, global_micro), step_targets);
    ModelCarry<float> carry;
    carry.segment_start = segment_starts();
    if (stateful) {
      carry.in = carry_reset ? nullptr : carry_in_ + micro * carry_slot_;
      carry.out = carry_out_ + micro * carry_slot_;
      carry.pos0 = carry_position(step);
    }
    timer.reset();
    double loss = forward(random, carry);
    st.forward_ms += timer.ms();
    if (!std::isfinite(loss)) fail_non_finite(step, "the training loss");
    timer.reset();
    backward(random, weight, micro == 0 ? GradWrite::overwrite : GradWrite::accumulate);
    if (shards_ && micro + 1 == tc.grad_accum) shards_->reduce_grads();
    st.backward_ms += timer.ms();
    loss_sum += examples ? loss * weight : loss;  // text: the same weight for all, applied below as before
  }
  step_update(st, step, examples ? loss_sum : loss_sum * scale);
  std::swap(carry_in_, carry_out_);  // the step is taken: its final states enter the next
  st.supervised = step_targets;
  return st;
}

// data.document_boundaries reset: the batch's document starts, which the attention restarts
// at; none: null (the attention runs across documents).
const uint8_t* TrainSession::segment_starts() const {
  return config_.data.document_boundaries == DocumentBoundaries::reset ? batch_.starts.data() : nullptr;
}

void TrainSession::step_update(StepStats& st, int64_t step, double loss) {
  const TrainConfig& tc = config_.train;
  Timer timer;
  // The one gradient all-reduce of the step (no-op with one rank), and the loss's.
  dist_allreduce_sum(model_.grads(), model_.param_size());
  dist_allreduce_sum(&loss, 1);
  st.allreduce_ms = timer.ms();
  timer.reset();
  st.step = step;
  st.loss = loss;
  st.grad_norm = grad_clip(model_.grads(), model_.param_size(), config_.optim.grad_clip);
  if (!std::isfinite(st.grad_norm)) fail_non_finite(step, "the gradient norm");
  const int64_t total = std::max<int64_t>(tc.steps, step + 1);
  st.lr = lr_at(config_.optim, step, total);
  adamw_update(adamw_step_make(config_.optim, st.lr, steps_taken_ + 1), mask_, model_.params(), model_.grads(),
               adam_m(), adam_v(), model_.param_size());
  ++steps_taken_;
  sigma_floor_apply(steps_taken_);
  st.optimizer_ms = timer.ms();
  st.tokens = int64_t(tc.batch_size) * model_.spec.model.context_length * tc.grad_accum * dist_size();
}

void TrainSession::sigma_floor_apply(int64_t taken) {
  const OptimConfig& o = config_.optim;
  if (o.sigma_floor <= 0) return;
  const double ramp = o.sigma_floor_steps > 0 ? std::min(1.0, double(taken) / double(o.sigma_floor_steps)) : 1.0;
  const float floor = static_cast<float>(o.sigma_floor * ramp);
  float* p = model_.params();
  for (const NamedRange& r : sigma_ranges_)  // the sign kept: the kernel depends on sigma squared
    for (int64_t i = r.offset; i < r.offset + r.count; ++i)
      if (std::abs(p[i]) < floor) p[i] = std::copysign(floor, p[i]);
}

PerplexityPlan TrainSession::eval_plan(int64_t tokens) const {
  PerplexityOptions o;  // the defaults of `rfa eval perplexity`: the same numbers
  o.progress = false;
  return perplexity_plan(model_.spec, tokens, o);
}

ExampleNll TrainSession::evaluate_examples(const ExampleSet& set, std::vector<double>* logprobs) {
  const int max_tokens = model_.spec.model.context_length + 1;
  if (!example_decoder_) example_decoder_ = std::make_unique<Decoder<float>>(model_, example_decoder_options(max_tokens));
  return example_nll(*example_decoder_, set, max_tokens, example_scratch_, stop_requested, logprobs);
}

void TrainSession::row_logprobs() {
  RFA_ASSERT(acts_, "preference pairs run under the kernel split (thread_split_resolve)");
  const Activations<float>& acts = *acts_;
  const int B = acts.B, T = acts.T_len;
  for (int b = 0; b < B; ++b) {
    double sum = 0;
    for (int t = 0; t < T; ++t)
      if (batch_.targets[static_cast<size_t>(b) * T + t] >= 0) sum += acts.losses[static_cast<size_t>(b) * T + t];
    dpo_logp_[static_cast<size_t>(b)] = -sum;
  }
}

std::vector<double> TrainSession::dpo_logprobs(const ExampleSampler& pairs) {
  const int slots = config_.train.batch_size / 2;
  std::vector<double> out(static_cast<size_t>(pairs.units()) * 2);
  model_.bf16_refresh();
  for (int64_t first = 0; first < pairs.units(); first += slots) {
    const int64_t n = std::min<int64_t>(slots, pairs.units() - first);
    for (int slot = 0; slot < slots; ++slot) pairs.fill_unit(first + std::min<int64_t>(slot, n - 1), slot, batch_);
    ModelCarry<float> rows;
    rows.segment_start = segment_starts();
    forward(model_.random_fixed(), rows);
    row_logprobs();
    for (int64_t slot = 0; slot < n; ++slot)
      for (int r = 0; r < 2; ++r)
        out[static_cast<size_t>((first + slot) * 2 + r)] = dpo_logp_[static_cast<size_t>(slot * 2 + r)];
  }
  return out;
}

StepStats TrainSession::step(int64_t step, const ExampleSampler& pairs, const std::vector<double>& reference) {
  const TrainConfig& tc = config_.train;
  RFA_ASSERT(pairs.unit_rows() == 2 && config_preference(config_.data), "a DPO step takes preference pairs");
  RFA_ASSERT(reference.size() == static_cast<size_t>(pairs.units()) * 2, "reference of {} answers for {} pairs",
             reference.size(), pairs.units());
  RFA_ASSERT(pairs.micro_batches() == tc.grad_accum * dist_size(), "pairs built for {} micro-batches",
             pairs.micro_batches());
  StepStats st;
  Timer timer;
  const float* random = model_.random_fixed();  // the reference's: at the first step the policy is the reference
  model_.bf16_refresh();
  st.setup_ms = timer.ms();
  const int rank = dist_rank(), ranks = dist_size(), T = model_.spec.model.context_length;
  const int slots = tc.batch_size / 2;
  const double step_pairs = double(slots) * tc.grad_accum * ranks;  // the loss is the mean over the step's pairs
  double loss_sum = 0;
  for (int micro = 0; micro < tc.grad_accum; ++micro) {
    if (ranks == 1 && stop_requested()) {
      st.stopped = true;
      return st;
    }
    const int global_micro = batch_global_micro(rank, ranks, micro);
    pairs.sample(step, global_micro, batch_);
    timer.reset();
    ModelCarry<float> rows;
    rows.segment_start = segment_starts();
    const double mean = forward(random, rows);
    st.forward_ms += timer.ms();
    if (!std::isfinite(mean)) fail_non_finite(step, "the training loss");
    row_logprobs();
    for (int slot = 0; slot < slots; ++slot) {
      const int64_t u = pairs.unit(step, global_micro, slot);
      const DpoTerms d = dpo_terms(dpo_logp_[2 * slot], dpo_logp_[2 * slot + 1], reference[2 * u],
                                   reference[2 * u + 1], tc.dpo_beta);
      loss_sum += d.loss / step_pairs;
      for (int r = 0; r < 2; ++r) {  // + on the chosen answer's targets, - on the rejected one's
        const double w = (r == 0 ? d.weight : -d.weight) / step_pairs;
        double* weights = dpo_weights_.data() + static_cast<size_t>(2 * slot + r) * T;
        for (int t = 0; t < T; ++t) weights[t] = w;
      }
    }
    timer.reset();
    RFA_ASSERT(acts_, "preference pairs run under the kernel split");
    model_backward_weighted(model_, *acts_, batch_.inputs.data(), batch_.targets.data(), random, dpo_weights_.data(),
                            micro == 0 ? GradWrite::overwrite : GradWrite::accumulate);
    st.backward_ms += timer.ms();
  }
  step_update(st, step, loss_sum);
  return st;
}

double TrainSession::evaluate(std::span<const int32_t> tokens, std::span<const int64_t> starts) {
  const PerplexityPlan plan = eval_plan(static_cast<int64_t>(tokens.size()));
  const DecoderOptions& d = plan.decoder;
  const DecoderOptions& built = eval_decoder_plan_.decoder;
  if (!eval_decoder_ || d.max_segment != built.max_segment || d.max_positions != built.max_positions) {
    eval_decoder_ = std::make_unique<Decoder<float>>(model_, d);
    eval_decoder_plan_ = plan;
  }
  const double sum = perplexity_nll_sum(*eval_decoder_, plan, tokens, PassProgress{"train", "validation: "},
                                       stop_requested, starts);
  return sum / static_cast<double>(tokens.size() - 1);  // NaN if a stop request cut the pass short
}

}  // namespace rfa
