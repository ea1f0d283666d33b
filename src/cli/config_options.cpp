#include "cli/config_options.h"

#include <cstdio>
#include <utility>

#include "config/config_load.h"

namespace rfa {

void config_options_add(CLI::App& command, ConfigOptions& options) {
  command.add_option("--config", options.path, "YAML config file (configs/ holds the shipped ones)")->type_name("FILE");
  // One value per --set: `--set a=1 --set b=2`, never `--set a=1 b=2`.
  command.add_option("--set", options.sets, "Override one key, e.g. --set optim.lr=3e-4 (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  command.add_flag("--dump-config", options.dump, "Print the merged config as YAML and exit");
}

std::optional<ConfigLoaded> config_options_load_with_origins(const ConfigOptions& options) {
  ConfigLoaded loaded = config_load_with_origins(options.path, options.sets);
  if (!options.dump) return loaded;
  std::string dump = config_dump(loaded.config);
  std::fwrite(dump.data(), 1, dump.size(), stdout);
  std::fflush(stdout);
  return std::nullopt;
}

std::optional<Config> config_options_load(const ConfigOptions& options) {
  std::optional<ConfigLoaded> loaded = config_options_load_with_origins(options);
  if (!loaded) return std::nullopt;
  return std::move(loaded->config);
}

}  // namespace rfa
