// rfa train --config F [--set k=v ...] [--stop-after N]: trains a model; see train/train_run.h.
// rfa train --resume RUN_DIR|CHECKPOINT_DIR [--set k=v ...]: continues a run (train/train_resume.h).
// rfa train --config F --init-from RUN|CHECKPOINT_DIR: a new run from a trained model (train/train_init.h).
#include <cstdio>
#include <memory>

#include "cli/cli_checks.h"
#include "cli/commands.h"
#include "cli/config_options.h"
#include "config/config_load.h"
#include "core/error.h"
#include "train/train_init.h"
#include "train/train_resume.h"
#include "train/train_run.h"

namespace rfa {
namespace {

struct TrainFlags {
  std::string resume;      // --resume; "" = a new run
  std::string init_from;   // --init-from: train.init_from
  int64_t stop_after = 0;  // --stop-after
  bool overwrite = false;  // --overwrite
};

void train_command_run(const ConfigOptions& config_options, const TrainFlags& flags) {
  TrainOptions options;
  options.stop_after = flags.stop_after;
  options.overwrite = flags.overwrite;
  if (flags.resume.empty()) {
    ConfigLoaded loaded = config_load_with_origins(config_options.path, config_options.sets);
    Config& config = loaded.config;
    if (!flags.init_from.empty()) config.train.init_from = flags.init_from;
    if (config_options.dump) {  // a fine-tune's config: the parent's architecture merged in
      const std::string dump =
          config_dump(config.train.init_from.empty() ? config : init_from_prepare(config, loaded.origins).config);
      std::fwrite(dump.data(), 1, dump.size(), stdout);
      return;
    }
    options.config_origins = std::move(loaded.origins);
    train_run(config, options);
    return;
  }
  if (!flags.init_from.empty())
    fail("--init-from {} starts a new run from a trained model and --resume {} continues a run from its own "
         "checkpoint; give one of them (a resumed fine-tune needs no --init-from: its checkpoint holds its weights)",
         flags.init_from, flags.resume);
  if (!config_options.path.empty())
    fail("--resume {} continues with the run's saved config; drop --config {} (use --set for the keys that may "
         "change, e.g. --set train.steps=N)",
         flags.resume, config_options.path);
  ResumePoint point = resume_prepare(flags.resume, config_options.sets);
  if (config_options.dump) {
    std::string dump = config_dump(point.config);
    std::fwrite(dump.data(), 1, dump.size(), stdout);
    return;
  }
  options.resume_checkpoint = point.checkpoint_dir;
  options.resume_tokenizer = point.tokenizer_path;
  train_run(point.config, options);
}

}  // namespace

void register_train_command(CLI::App& app, CommandAction& action) {
  CLI::App* train = app.add_subcommand(
      "train", "Train a model: prepares missing data, logs to train.run_dir, saves checkpoints");
  auto options = std::make_shared<ConfigOptions>();
  auto flags = std::make_shared<TrainFlags>();
  config_options_add(*train, *options);
  train->add_option("--resume", flags->resume,
                    "Continue a run from RUN_DIR's latest checkpoint or from a checkpoint directory, with its saved "
                    "config (--set may change only train.steps, cadences and paths)")
      ->type_name("DIR");
  train->add_option("--init-from", flags->init_from,
                    "Fine-tune: start from the weights, architecture and tokenizer of RUN_DIR's latest checkpoint or "
                    "of a checkpoint directory (train.init_from); step 0, fresh AdamW moments, this config's schedule")
      ->type_name("DIR");
  train->add_option("--stop-after", flags->stop_after,
                    "Stop after this optimizer step: evaluate, save a checkpoint, exit 0")
      ->type_name("STEP")
      ->check(cli_integer<int64_t>(1));
  train->add_flag("--overwrite", flags->overwrite,
                  "Start afresh even if train.run_dir holds an earlier run: its checkpoints are deleted once the new "
                  "run's data, model and memory are validated");
  train->callback([&action, options, flags] {
    action = [options, flags] { train_command_run(*options, *flags); };
  });
}

}  // namespace rfa
