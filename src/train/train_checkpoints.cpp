#include "train/train_checkpoints.h"

#include <limits>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "config/config_load.h"
#include "core/error.h"
#include "core/log.h"
#include "model/model_io.h"
#include "optim/grad_clip.h"
#include "train/train_report.h"
#include "train/train_setup.h"

namespace rfa {
namespace {

// Writes one checkpoint into the owner's run directory; returns its directory.
std::string checkpoint_write(RunDirOwner& owner, TrainSetup& setup, const TrainState& state) {
  Model<float>& m = setup.session().model();
  CheckpointContents contents;
  contents.model = model_tensor_refs(m);
  contents.optimizer = optimizer_tensor_refs(m, setup.session().adam_m(), setup.session().adam_v());
  if (setup.streams()) contents.streams = setup.streams()->refs();  // gathered from every rank by save()
  contents.state = state;
  contents.config_yaml = config_dump(setup.config());
  contents.tokenizer_path = owner.dir() + "/tokenizer.model";
  return checkpoint_save(owner.dir() + "/checkpoints", contents, setup.config().checkpoint);
}

}  // namespace

TrainCheckpoints::TrainCheckpoints(TrainSetup& setup, const std::string& resumed_checkpoint, ProgressLine& progress)
    : setup_(setup), progress_(progress), state_(setup.start().state), saved_dir_(resumed_checkpoint) {
  if (!resumed_checkpoint.empty()) saved_step_ = setup.start().step;
}

std::string TrainCheckpoints::save(int64_t done, double val_loss, const CheckpointTotals& totals) {
  if (setup_.streams()) setup_.streams()->gather(done);  // collective: every rank, before the owner writes
  RunDirOwner* const owner = setup_.owner();
  if (!owner) return "";  // not rank 0: it took part in the gather, and writes nothing
  state_.step = done;
  state_.data_position = done;  // batches are keyed by (seed, step, micro): the step is the cursor
  state_.tokens_seen = totals.tokens_seen;
  state_.wall_seconds = totals.wall_seconds;
  state_.val_loss = val_loss >= 0 ? val_loss : std::numeric_limits<double>::quiet_NaN();
  state_.best_val_loss = totals.best_val_loss;
  progress_.clear();
  const Model<float>& model = setup_.session().model();
  std::vector<NamedRange> ranges;
  for (const ParamEntry& e : model.table.entries()) ranges.push_back({e.name, e.offset, e.numel});
  if (auto bad = grad_find_non_finite(model.params(), model.param_size(), ranges))
    fail("step {}: the update left weight {}[{}] = {}, so its checkpoint is not written ({}); lower optim.lr", done,
         bad->name, bad->index, bad->value,
         saved_dir_.empty() ? std::string("no checkpoint of this run exists")
                            : fmt::format("the previous checkpoint {} is intact", saved_dir_));
  try {
    saved_dir_ = checkpoint_write(*owner, setup_, state_);
  } catch (const Error& e) {  // a full disk, mostly: say what survives and how to go on
    fail("the checkpoint of step {} was not saved: {}. {}; make room (or fix the cause), then {}", done, e.what(),
         saved_dir_.empty() ? std::string("No checkpoint of this run exists")
                            : fmt::format("The previous checkpoint {} is intact", saved_dir_),
         saved_dir_.empty() ? std::string("start the run again")
                            : fmt::format("continue with: rfa train --resume {}", owner->dir()));
  }
  saved_step_ = done;
  owner->checkpoint_written();
  log_info("train", "checkpoint {}", saved_dir_);
  return saved_dir_;
}

}  // namespace rfa
