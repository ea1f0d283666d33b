// rfa data prepare --config F [--set k=v ...]: makes sure the tokenizer exists
// (training it from the corpus when its file is missing), then encodes the
// corpus into the token file with its train/validation split. A fine-tune's
// config (train.init_from) is encoded with its parent's tokenizer, as `rfa train`
// encodes it: none is trained.
#include <memory>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "core/log.h"
#include "data/data_setup.h"
#include "train/train_init.h"

namespace rfa {
namespace {

void data_prepare(const ConfigLoaded& loaded) {
  if (loaded.config.train.init_from.empty()) {
    data_ensure(loaded.config, /*encode_always=*/true);
    return;
  }
  const InitPoint point = init_from_prepare(loaded.config, loaded.origins);
  log_info("data", "train.init_from {}: encoding with the parent's tokenizer {}", loaded.config.train.init_from,
           point.tokenizer_path);
  data_encode_with(point.config, Tokenizer::load(point.tokenizer_path));
}

}  // namespace

void register_data_command(CLI::App& app, CommandAction& action) {
  CLI::App* data = app.add_subcommand("data", "Token data tools");
  data->require_subcommand(1);
  CLI::App* prepare = data->add_subcommand(
      "prepare", "Encode data.corpus into the token file (data.tokens), training the tokenizer first if missing");
  auto options = std::make_shared<ConfigOptions>();
  config_options_add(*prepare, *options);
  prepare->callback([&action, options] {
    action = [options] {
      std::optional<ConfigLoaded> loaded = config_options_load_with_origins(*options);
      if (loaded) data_prepare(*loaded);
    };
  });
}

}  // namespace rfa
