#pragma once
// The configuration options every subcommand that needs a Config shares:
//   --config FILE      YAML file over the defaults
//   --set k.path=v     override one key (repeatable, applied in order)
//   --dump-config      print the merged config as YAML to stdout and stop (exit 0)
// Usage in a register function:
//   auto options = std::make_shared<ConfigOptions>();
//   config_options_add(*command, *options);
//   command->callback([&action, options] { action = [options] {
//     std::optional<Config> config = config_options_load(*options);
//     if (!config) return;  // --dump-config printed it
//     ...
//   }; });
#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_load.h"

namespace rfa {

struct ConfigOptions {
  std::string path;               // --config; "" = defaults only
  std::vector<std::string> sets;  // --set, in command-line order
  bool dump = false;              // --dump-config
};

// Adds the three options to `command`; `options` is filled when it parses, so
// it must outlive parsing (hold it in a shared_ptr captured by the callback).
void config_options_add(CLI::App& command, ConfigOptions& options);

// The merged, validated Config (throws rfa::Error). With --dump-config it
// prints the dump to stdout and returns nullopt: the command has nothing more to do.
std::optional<Config> config_options_load(const ConfigOptions& options);
// The same, with where each given key came from (config_load_with_origins).
std::optional<ConfigLoaded> config_options_load_with_origins(const ConfigOptions& options);

}  // namespace rfa
