// rfa data prepare --config F [--set k=v ...]: makes sure the tokenizer exists
// (training it from the corpus when its file is missing), then encodes the
// corpus into the token file with its train/validation split. A fine-tune's
// config (train.init_from) is encoded with its parent's tokenizer, as `rfa train`
// encodes it: none is trained.
// rfa data mqar --out DIR [--seq-len T --pairs P --queries Q --vocab V --train N --val M --seed S]:
// writes the multi-query associative recall task (data/mqar.h, docs/recall.md): DIR/mqar.tokens,
// its tokenizer DIR/mqar.model and DIR/mqar.yaml, the keys `rfa train --config` needs.
#include <memory>

#include "cli/cli_checks.h"
#include "cli/commands.h"
#include "cli/config_options.h"
#include "core/log.h"
#include "data/data_setup.h"
#include "data/mqar.h"
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

  auto mqar = std::make_shared<MqarOptions>();
  auto out = std::make_shared<std::string>();
  CLI::App* gen = data->add_subcommand("mqar", "Write the multi-query associative recall task (docs/recall.md)");
  gen->add_option("--out", *out, "Directory for mqar.tokens, mqar.model and mqar.yaml")->required();
  gen->add_option("--seq-len", mqar->seq_len, "T: inputs per example (an example is T + 1 tokens)")
      ->capture_default_str()
      ->check(cli_integer<int>(2));
  gen->add_option("--pairs", mqar->pairs, "P: key-value pairs shown")->capture_default_str()->check(cli_integer<int>(1));
  gen->add_option("--queries", mqar->queries, "Q: keys asked again, distinct (0 = all P)")
      ->capture_default_str()
      ->check(cli_integer<int>(0));
  gen->add_option("--vocab", mqar->vocab, "Symbols: the first half keys, the second values (a blank besides)")
      ->capture_default_str()
      ->check(cli_integer<int>(2));
  gen->add_option("--train", mqar->train, "Training examples")->capture_default_str()->check(cli_integer<int64_t>(1));
  gen->add_option("--val", mqar->val, "Validation examples (after the training ones)")
      ->capture_default_str()
      ->check(cli_integer<int64_t>(1));
  gen->add_option("--seed", mqar->seed, "Seed of the examples")->capture_default_str()->check(cli_integer<uint64_t>(0));
  gen->callback([&action, mqar, out] { action = [mqar, out] { mqar_write(*mqar, *out); }; });
}

}  // namespace rfa
