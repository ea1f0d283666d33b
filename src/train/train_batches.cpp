#include "train/train_batches.h"

#include <cmath>
#include <limits>

#include "config/config_enums.h"
#include "core/error.h"
#include "core/log.h"
#include "train/dpo.h"

namespace rfa {

TrainBatches::TrainBatches(const TokenFile& tokens, const Config& c, int ranks, int32_t pad_id) : config_(c) {
  const TrainConfig& tc = c.train;
  const int T = c.model.context_length;
  const DocumentTable docs = tokens.documents();
  const int64_t split_document = tokens.header().split_document;
  documents_ = docs.size();
  val_documents_ = docs.size() - split_document;
  if (config_supervised(c.data) || config_preference(c.data)) {
    const ExampleLayout layout{.packing = c.data.packing,
                               .batch_size = tc.batch_size,
                               .context_length = T,
                               .train_on_prompt = c.data.train_on_prompt,
                               .pad_id = pad_id,
                               .pairs = config_preference(c.data)};
    examples_.emplace(tokens.all(), docs, 0, split_document, layout, tc.seed, tc.grad_accum * ranks);
    val_examples_ = {tokens.all(), docs, split_document, docs.size() - split_document};
    const int per = pairs() ? 2 : 1;  // what validation can score, as in training (pairs: both answers)
    for (int64_t d = split_document; d < docs.size(); d += per) {
      int64_t too_long = 0, empty = 0;
      for (int64_t e = d; e < d + per; ++e) {
        too_long += docs.end(e) - docs.start(e) > int64_t(T) + 1;
        empty += example_supervised(docs, e, false) <= 0;
      }
      if (too_long) ++val_counts_.too_long;
      else if (empty) ++val_counts_.nothing_to_learn;
      else ++val_counts_.kept;
    }
    if (val_counts_.kept == 0)
      fail("none of the {} validation examples (or pairs) can be scored: {} are longer than model.context_length + 1 = {} "
           "tokens; raise model.context_length, or data.val_fraction (then re-run `rfa data prepare`)",
           val_examples_.count, val_counts_.too_long, T + 1);
    return;
  }
  if (tc.stateful) {
    streams_.emplace(tokens.train(), tc.batch_size, T, tc.grad_accum * ranks);
  } else {
    windows_.emplace(tokens.train(), tc.batch_size, T, tc.seed);
    if (docs.size() > 0) windows_->set_documents(docs, 0);  // the training split starts the file
  }
  const TokenSplit val = tokens.val();
  (void)SequentialBatches(val, tc.batch_size, T);  // throws now if val is shorter than T+1
  val_text_ = validation_text(val, tc, T);
  if (c.data.document_boundaries == DocumentBoundaries::reset && docs.size() > 0)  // restarts at each document
    val_text_.starts = document_starts_in(docs, tokens.header().split, static_cast<int64_t>(val_text_.tokens.size()));
}

void TrainBatches::prepare_reference(TrainSession& session) {
  if (!pairs()) return;
  reference_ = session.dpo_logprobs(*examples_);
  session.evaluate_examples(val_examples_, &val_reference_);
}

StepStats TrainBatches::step(TrainSession& session, int64_t step) const {
  if (pairs()) return session.step(step, *examples_, reference_);
  if (examples_) return session.step(step, *examples_);
  if (streams_) return session.step(step, *streams_);
  return session.step(step, *windows_);
}

ValLoss TrainBatches::evaluate(TrainSession& session) {
  if (!examples_) return {session.evaluate(val_text_.tokens, val_text_.starts), {}};
  const ExampleNll r = session.evaluate_examples(val_examples_, pairs() ? &val_policy_ : nullptr);
  if (r.stopped) return {std::numeric_limits<double>::quiet_NaN(), {}};
  if (!pairs()) return {r.response_mean(), {{"val_prompt_loss", r.prompt_mean()}}};
  const DpoScores s = dpo_scores(val_policy_, val_reference_, config_.train.dpo_beta);
  return {s.loss, {{"val_pair_accuracy", s.accuracy}, {"val_margin", s.margin}, {"val_reward_accuracy", s.reward_accuracy}}};
}

void TrainBatches::log(const TrainSession& session) const {
  const TrainConfig& tc = config_.train;
  if (documents_ > 0 && !examples_ && config_.data.document_boundaries == DocumentBoundaries::none)
    log_info("train", "documents: {} ({} format), joined by EOS; data.document_boundaries none: attention runs "
             "across them, and every target, EOS included, is trained on",
             documents_, enum_name(config_.data.format));
  if (documents_ > 0 && !examples_ && config_.data.document_boundaries == DocumentBoundaries::reset)
    log_info("train", "documents: {} ({} format), joined by EOS; data.document_boundaries reset: attention "
             "restarts at each document's first token (state empty, positions from 0), in training and in "
             "validation; every target, EOS included, is trained on",
             documents_, enum_name(config_.data.format));
  if (pairs()) {
    const ExampleCounts& k = examples_->counts();
    log_info("train", "preference pairs: {} for training (each a chosen and a rejected answer in padded rows side by "
             "side), {} dropped with an answer longer than context_length + 1 = {} tokens or with nothing to learn; "
             "DPO, beta {}, against the --init-from model's log-probabilities (computed once), the fixed random "
             "matrices; the step's loss is the mean over its {} pairs",
             k.kept, k.too_long + k.nothing_to_learn, config_.model.context_length + 1, tc.dpo_beta,
             int64_t(tc.batch_size / 2) * examples_->micro_batches());
    log_info("train", "val loss: the DPO loss of the held-out pairs (each answer scored alone), with the share the "
             "model prefers the chosen answer in (val_pair_accuracy), its mean log-probability margin (val_margin) "
             "and the share whose implicit reward favours the chosen one (val_reward_accuracy)");
    return;
  }
  if (examples_) {
    const ExampleCounts& k = examples_->counts();
    log_info("train", "instruction examples ({}): {} for training in {} rows ({}: {}), {} dropped as longer than "
             "context_length + 1 = {} tokens, {} with nothing to learn; loss on the {}; the step's loss is the mean "
             "over its trained targets",
             enum_name(config_.data.format), k.kept, examples_->rows(), enum_name(config_.data.packing),
             config_.data.packing == Packing::pad ? "one per row" : "whole examples back to back",
             k.too_long, config_.model.context_length + 1, k.nothing_to_learn,
             config_.data.train_on_prompt           ? "prompt and the response"
             : config_.data.format == DataFormat::mqar ? "answers only (the value after each query key)"
                                                       : "response and its EOS only");
    if (config_.data.packing == Packing::pack)
      log_info("train", "data.document_boundaries {}: {}", enum_name(config_.data.document_boundaries),
               config_.data.document_boundaries == DocumentBoundaries::reset
                   ? "the attention restarts at each packed example's first token (as if each had its own row)"
                   : "the attention runs across the packed examples of a row (set reset to restart at each)");
    log_info("train", "val loss: mean {} NLL of {} held-out examples (each alone from an empty state; "
             "{} too long are skipped), the prompt's NLL beside it; as `rfa eval perplexity` computes it",
             config_.data.format == DataFormat::mqar ? "answer" : "response-token", val_counts_.kept,
             val_counts_.too_long);
    return;
  }
  if (streams_)
    log_info("train", "stateful: {} streams of ~{} tokens (each row continues its stream, states carried between "
             "steps); random features: {}",
             int64_t(streams_->micro_batches()) * tc.batch_size, streams_->stream_period(0, 0),
             tc.stateful_redraw == 0 ? std::string("the fixed evaluation set")
                                     : fmt::format("redrawn every {} steps, states reset then", tc.stateful_redraw));
  log_info("train", "val loss: mean NLL per token over {}, {}; as `rfa eval perplexity` computes it", val_text_.what,
           perplexity_method(session.eval_plan(static_cast<int64_t>(val_text_.tokens.size()))));
}

}  // namespace rfa
