#include "train/train_run.h"

#include "core/timer.h"
#include "train/train_init.h"
#include "train/train_loop.h"
#include "train/train_setup.h"

namespace rfa {
namespace {

// train_run with `init` (a fine-tune, train/train_init.h) or without.
TrainResult train_run_with(const Config& config, const TrainOptions& options, const InitPoint* init) {
  train_preflight(config, options, init);
  Timer wall;  // the run's wall time in this process, from before the run directory is locked
  TrainSetup setup(config, options, init);
  return train_loop(setup, options, wall);
}

}  // namespace

TrainResult train_run(const Config& config, const TrainOptions& options) {
  if (!options.resume_checkpoint.empty() || config.train.init_from.empty())
    return train_run_with(config, options, nullptr);  // a resumed fine-tune loads its own checkpoint
  const InitPoint init = init_from_prepare(config, options.config_origins);  // reads only: refuses before any write
  return train_run_with(init.config, options, &init);
}

}  // namespace rfa
