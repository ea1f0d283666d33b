#include "train/train_setup.h"

#include <cstdint>
#include <string>

#include "config/config_enums.h"
#include "core/error.h"
#include "core/log.h"
#include "core/memory_check.h"
#include "core/parallel.h"
#include "dist/dist.h"
#include "model/memory_estimate.h"
#include "train/checkpoint_space.h"
#include "train/thread_split.h"
#include "tokenizer/model_proto.h"
#include "train/train_dist.h"

namespace rfa {
namespace {

// Refuses a run that cannot fit in memory before anything is written or
// allocated. Without model.vocab_size the tokenizer's configured size stands in
// (exact for bpe and unigram, an upper bound for char).
void memory_require_training(const Config& c) {
  ModelConfig model = c.model;
  if (model.vocab_size == 0) model.vocab_size = c.tokenizer.vocab_size;
  const ModelSpec spec = model_spec_make(model, c.attention);
  const int threads = thread_count();
  MemoryEstimate need = memory_estimate_train(spec, c.train, threads, dist_size(), thread_split_resolve(c, spec, threads));
  // Every rank on this machine checks the same free memory at about the same moment: each counts all of them.
  need.add_copies("the other ranks on this machine", dist_local_size() - 1,
                  fmt::format("the ranks per machine (mpirun -np: {} here)", dist_local_size()));
  memory_require(need, "training this model");
}

// The run's data: prepared with the tokenizer a resume or a fine-tune must use, when given.
TrainData train_data_for(const Config& config, const std::string& tokenizer_path, const InitPoint* init) {
  try {
    TrainData data = train_data_ensure(config, tokenizer_path);
    // Made from the parent's corpus by design: no warning (data/data_setup.h), but say which.
    if (init) {
      const std::string trained_on = model_proto_training_input(data.tokenizer.model_bytes());
      log_info("init", "this run's corpus {} is encoded with the parent's tokenizer {}{}", config.data.corpus,
               init->tokenizer_path, trained_on.empty() ? "" : fmt::format(", trained on {}", trained_on));
    }
    return data;
  } catch (const Error& e) {
    if (!init) throw;
    throw Error(fmt::format("{} (--init-from: this run's corpus is encoded with the parent's tokenizer {}; point "
                            "data.tokens at a new file and it is created)",
                            e.what(), init->tokenizer_path));
  }
}

// Every rank opens the run's data; rank 0 first, preparing what is missing (the tokenizer, the
// token file) while the other ranks wait at the barrier, so that one process writes them.
TrainData train_data_root_first(const Config& config, const TrainOptions& options, const InitPoint* init) {
  const bool resuming = !options.resume_checkpoint.empty();
  if (!dist_is_root()) dist_barrier();
  TrainData data = train_data_for(config, resuming ? options.resume_tokenizer : init ? init->tokenizer_path : "", init);
  if (dist_is_root()) dist_barrier();
  return data;
}

Config resolve_vocab(Config c, const Tokenizer& tok) {
  if (c.model.vocab_size == 0) {
    c.model.vocab_size = tok.vocab_size();
  } else if (c.model.vocab_size != tok.vocab_size()) {
    fail("model.vocab_size {} differs from the tokenizer {} ({} tokens); set model.vocab_size: 0 to follow the "
         "tokenizer",
         c.model.vocab_size, tok.origin(), tok.vocab_size());
  }
  return c;
}

// What is trained, on what, with what (the run's first log lines).
void log_run(TrainSession& session, const TrainBatches& batches, const TokenFile& tokens) {
  const ModelSpec& spec = session.model().spec;
  const TrainConfig& tc = session.config().train;
  const int64_t T = spec.model.context_length;
  log_info("train", "{} attention, L={} C={} H={} T={} V={}: {} parameters; batch {}x{}x{} = {} tokens/step, {} threads",
           model_spec_attention_text(spec), spec.L, spec.C, spec.H, T, spec.V, session.model().table.count(),
           tc.batch_size, tc.grad_accum, T, int64_t(tc.batch_size) * tc.grad_accum * T, thread_count());
  if (thread_count() > 1)
    log_info("train", "{} (train.thread_split {})", thread_split_text(session.thread_split(), tc.batch_size, thread_count()),
             enum_name(tc.thread_split));
  if (tc.precision == Precision::bf16)
    log_info("train", "train.precision bf16: matrix products on bf16 copies of the weights and their inputs; "
             "fp32 master weights, AdamW and evaluation (docs/bf16.md)");
  if (dist_size() > 1)
    log_info("train", "data parallel: {} ranks x batch {}x{}x{} = {} tokens/step; {}", dist_size(), tc.batch_size,
             tc.grad_accum, T, int64_t(dist_size()) * tc.batch_size * tc.grad_accum * T, dist_backend());
  log_info("train", "data: {} train / {} val tokens from {}; run dir {}", tokens.train().size(), tokens.val().size(),
           tokens.path(), tc.run_dir);
  batches.log(session);
}

}  // namespace

void train_preflight(const Config& config, const TrainOptions& options, const InitPoint* init) {
  train_dist_kernels_check();
  train_precision_require(config.train.precision);
  if (config_preference(config.data) && !init && options.resume_checkpoint.empty())
    fail("data.format preference trains by DPO against a frozen reference, the model it starts from: give "
         "--init-from RUN (an instruction-tuned run, as a rule) or set train.init_from");
  memory_require_training(config);
}

TrainSetup::TrainSetup(const Config& config, const TrainOptions& options, const InitPoint* init)
    : owner_(run_dir_owner_on_root(config.train.run_dir, options)),
      data_(train_data_root_first(config, options, init)),
      config_(resolve_vocab(config, data_.tokenizer)),
      batches_(data_.tokens, config_, dist_size(), data_.tokenizer.eos_id()),
      session_(config_, model_spec_make(config_.model, config_.attention),
               options.resume_checkpoint.empty() && !init ? SessionWeights::drawn : SessionWeights::loaded_after),
      fine_tune_(init != nullptr) {
  const bool resuming = !options.resume_checkpoint.empty();
  if (init) init_from_load(session_, *init);
  if (batches_.pairs()) {  // DPO's reference: the parent's log-probabilities, before any step
    if (resuming)  // the checkpoint loads after
      init_from_load(session_, train_start_dpo_parent(config_, options.resume_checkpoint));
    batches_.prepare_reference(session_);
  }
  if (batches_.streams()) streams_.emplace(session_, *batches_.streams());
  log_run(session_, batches_, data_.tokens);
  const std::string& tokenizer_bytes = data_.tokenizer.model_bytes();
  start_ = resuming ? train_start_resumed(session_, streams(), options, tokenizer_bytes)
                    : train_start_new(config_, tokenizer_bytes, init);
  // Nothing refuses the run from here on: the owner replaces and writes.
  if (owner_) {
    owner_->replace_earlier_run();
    owner_->write_run_files(config_, tokenizer_bytes, resuming, start_.step);
    checkpoint_space_warn(config_.train.run_dir, session_.model().param_size(), int64_t(tokenizer_bytes.size()),
                          config_.checkpoint);
  }
  if (resuming)
    log_info("train", "resuming from {} at step {}/{} ({} tokens seen)", options.resume_checkpoint, start_.step,
             config_.train.steps, start_.tokens_seen);
  // Every rank initialised (or loaded) the same weights: prove it before the first step.
  train_dist_weights_check(session_.model().params(), session_.model().param_size(), 0);
}

}  // namespace rfa
