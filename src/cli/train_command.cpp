// rfa train --config F [--set k=v ...]: trains a model; see train/train_run.h.
#include <memory>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "train/train_run.h"

namespace rfa {

void register_train_command(CLI::App& app, CommandAction& action) {
  CLI::App* train = app.add_subcommand(
      "train", "Train a model: prepares missing data, logs to train.run_dir, saves checkpoints");
  auto options = std::make_shared<ConfigOptions>();
  config_options_add(*train, *options);
  train->callback([&action, options] {
    action = [options] {
      std::optional<Config> config = config_options_load(*options);
      if (config) train_run(*config);
    };
  });
}

}  // namespace rfa
