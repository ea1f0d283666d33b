// rfa data prepare --config F [--set k=v ...]: makes sure the tokenizer exists
// (training it from the corpus when its file is missing), then encodes the
// corpus into the token file with its train/validation split.
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "cli/heartbeat.h"
#include "cli/tokenizer_setup.h"
#include "core/log.h"
#include "core/timer.h"
#include "data/token_file.h"

namespace rfa {
namespace {

void data_prepare(const Config& config) {
  Timer timer;
  Tokenizer tokenizer = tokenizer_ensure(config);
  const std::string& corpus = config.data.corpus;
  std::string tokens_path = config_tokens_path(config.data);
  log_info("data", "encoding {} with {} (vocab {}), validation fraction {} -> {}", corpus, config.tokenizer.path,
           tokenizer.vocab_size(), config.data.val_fraction, tokens_path);
  std::error_code ec;
  auto parent = std::filesystem::path(tokens_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);  // a failure shows when writing
  TokenFileStats stats;
  {
    Heartbeat heartbeat("data", "encoding " + corpus);
    stats = token_file_prepare(corpus, tokenizer, tokens_path, config.data.val_fraction);
  }
  // token_file_prepare logged the token counts; add the text each split holds and the total time.
  log_info("data", "prepared {}: train {} tokens / {:.2f} MB of text, validation {} tokens / {:.2f} MB; {:.1f}s in all",
           tokens_path, stats.train_tokens, stats.train_bytes / 1e6, stats.val_tokens, stats.val_bytes / 1e6,
           timer.seconds());
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
      std::optional<Config> config = config_options_load(*options);
      if (config) data_prepare(*config);
    };
  });
}

}  // namespace rfa
