#pragma once
// Loading, checking and printing the configuration. Precedence, lowest first:
//   defaults (config.h) < YAML file < --set key.path=value (in order given).
// Every function throws rfa::Error with the key, the value, the file line
// where there is one, and what would be accepted.
#include <map>
#include <string>
#include <vector>

#include "config/config.h"

namespace rfa {

// Where each key a user gave came from: key path -> "configs/x.yaml:7" or "--set 'train.steps=5'".
// A key not in it was left out; one in it may hold its default value ('context_length: 64').
using ConfigOrigins = std::map<std::string, std::string>;

struct ConfigLoaded {
  Config config;
  ConfigOrigins origins;  // the keys the file and --set gave
};

// Defaults, then the YAML file (none when yaml_path is ""), then each
// "key.path=value" of `sets`; the result is validated.
ConfigLoaded config_load_with_origins(const std::string& yaml_path, const std::vector<std::string>& sets);
inline Config config_load(const std::string& yaml_path, const std::vector<std::string>& sets) {
  return config_load_with_origins(yaml_path, sets).config;
}

// Every key, from `origin`: a config that states them all (a checkpoint's config.yaml).
ConfigOrigins config_origins_all(const std::string& origin);

// Defaults, then YAML text (e.g. a dump saved in a checkpoint); validated.
// `origin` names the text in error messages ("checkpoint runs/x/step-500").
Config config_parse(const std::string& yaml_text, const std::string& origin);

// Applies one "key.path=value" to `config` (not validated).
void config_apply_set(const std::string& assignment, Config& config);

// Throws on any impossible value or combination (bounds from the key table,
// then cross-key rules such as n_heads dividing d_model).
void config_validate(const Config& config);

// YAML with every key in table order, one comment per key; config_parse of
// it gives back the same Config.
std::string config_dump(const Config& config);

// Markdown table of every key, its default, what is allowed and what it does (README).
std::string config_keys_markdown();

}  // namespace rfa
