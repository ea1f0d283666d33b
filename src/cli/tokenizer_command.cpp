// rfa tokenizer train --config F [--set k=v ...]: trains the tokenizer the
// config names (tokenizer.*) from its corpus, replacing an existing model file.
#include <memory>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "data/data_setup.h"

namespace rfa {

void register_tokenizer_command(CLI::App& app, CommandAction& action) {
  CLI::App* tokenizer = app.add_subcommand("tokenizer", "Tokenizer tools");
  tokenizer->require_subcommand(1);
  CLI::App* train = tokenizer->add_subcommand(
      "train", "Train the SentencePiece tokenizer named by tokenizer.path from tokenizer.corpus (or data.corpus)");
  auto options = std::make_shared<ConfigOptions>();
  config_options_add(*train, *options);
  train->callback([&action, options] {
    action = [options] {
      std::optional<Config> config = config_options_load(*options);
      if (config) tokenizer_train_logged(*config);
    };
  });
}

}  // namespace rfa
