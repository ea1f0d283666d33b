#pragma once
// Loading, checking and printing the configuration. Precedence, lowest first:
//   defaults (config.h) < YAML file < --set key.path=value (in order given).
// Every function throws rfa::Error with the key, the value, the file line
// where there is one, and what would be accepted.
#include <string>
#include <vector>

#include "config/config.h"

namespace rfa {

// Defaults, then the YAML file (none when yaml_path is ""), then each
// "key.path=value" of `sets`; the result is validated.
Config config_load(const std::string& yaml_path, const std::vector<std::string>& sets);

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
