#pragma once
// What a run steps over and validates on, by its data:
//   text and jsonl:         random windows of the training split (data/batch_sampler.h),
//                           each window's document starts marked when the file has documents;
//                           validation: the split's text (train/train_validation.h);
//   train.stateful:         contiguous streams (data/stream_sampler.h), the same validation;
//   alpaca, prompt_completion: rows of instruction examples (data/example_sampler.h);
//                           validation: the held-out examples, each alone, the loss the mean
//                           response-token NLL, the prompt's beside it (eval/example_nll.h);
//   preference:             pairs of padded rows trained by DPO (train/dpo.h) against the
//                           reference log-probabilities prepare_reference() computes once;
//                           validation: the held-out pairs' DPO loss, pair accuracy and margin.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "config/config.h"
#include "data/token_file.h"
#include "train/train_session.h"
#include "train/train_validation.h"

namespace rfa {

struct ValLoss {
  double loss = 0;  // NaN: a stop request cut the pass short
  // What is reported beside it, as metrics.jsonl fields: instruction data "val_prompt_loss";
  // preference pairs "val_pair_accuracy", "val_margin", "val_reward_accuracy".
  std::vector<std::pair<const char*, double>> extra;
};

class TrainBatches {
 public:
  // Throws Error when the training or validation split cannot give a batch or a validation
  // (shorter than a window, no example that fits), naming the keys that change it.
  // `pad_id` is the tokenizer's EOS (instruction rows are padded with it).
  TrainBatches(const TokenFile& tokens, const Config& config, int ranks, int32_t pad_id);

  // Preference pairs: the frozen reference's log-probabilities of every training and held-out
  // answer, computed with the session's weights now (the --init-from model). Before any step.
  void prepare_reference(TrainSession& session);

  StepStats step(TrainSession& session, int64_t step) const;
  ValLoss evaluate(TrainSession& session);
  void log(const TrainSession& session) const;  // what is trained and validated on
  StreamSampler* streams() { return streams_ ? &*streams_ : nullptr; }
  bool examples() const { return examples_.has_value(); }
  bool pairs() const { return config_preference(config_.data); }

 private:
  const Config& config_;
  std::optional<BatchSampler> windows_;
  std::optional<StreamSampler> streams_;
  std::optional<ExampleSampler> examples_;
  ValidationText val_text_;       // text, jsonl
  ExampleSet val_examples_;       // instruction data
  ExampleCounts val_counts_;
  std::vector<double> reference_;      // preference: (units, 2) of the training pairs
  std::vector<double> val_reference_;  // preference: one per held-out document
  std::vector<double> val_policy_;     // preference: the same under the current weights
  int64_t documents_ = 0, val_documents_ = 0;
};

}  // namespace rfa
