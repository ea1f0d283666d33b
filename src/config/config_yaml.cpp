// Reading: YAML files and text, and --set assignments, onto a Config through
// the key table. The only file in the project that includes yaml-cpp's parser.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "config/config_error.h"
#include "config/config_keys.h"
#include "config/config_load.h"
#include "core/error.h"

namespace rfa {
namespace {

// Where each key's value came from ("configs/x.yaml:7", "--set 'a=b'"), so a
// validation error can point at it.
using Origins = std::map<std::string, std::string>;

int line_of(const YAML::Node& node) { return node.Mark().is_null() ? 0 : node.Mark().line + 1; }

const char* node_kind(const YAML::Node& node) {
  if (node.IsSequence()) return "a sequence";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

bool is_section(const std::string& name) {
  auto sections = config_sections();
  return std::find(sections.begin(), sections.end(), name) != sections.end();
}

// Assigns one YAML value node to a known key. `where` is "file:line: ".
void assign_node(const ConfigKey& key, const YAML::Node& value, const std::string& where, Config& config) {
  std::string text;
  if (value.IsScalar()) {
    text = value.Scalar();
  } else if (!value.IsNull()) {
    fail("{}'{}' expects {}, got {}", where, key.path, config_key_expected(key), node_kind(value));
  }
  if (!config_key_set(key, text, config))
    fail("{}'{}' expects {}, got '{}'", where, key.path, config_key_expected(key), text);
}

void apply_yaml(const YAML::Node& root, const std::string& origin, Config& config, Origins& origins) {
  if (root.IsNull()) return;  // an empty file: all defaults
  if (!root.IsMap())
    fail("{}:{}: a config file is a mapping of sections (model:, attention:, ...), got {}", origin,
         line_of(root), root.IsSequence() ? "a sequence" : "a single value");
  std::map<std::string, int> first_line;  // key path -> line, to catch a key given twice
  auto visit = [&](const std::string& path, const YAML::Node& key_node, const YAML::Node& value) {
    int line = line_of(key_node);
    std::string where = fmt::format("{}:{}: ", origin, line);
    const ConfigKey* key = config_key_find(path);
    if (!key) fail("{}unknown key '{}'{}", where, path, config_key_hint(path));
    auto [it, fresh] = first_line.emplace(path, line);
    if (!fresh) fail("{}key '{}' is given twice (first on line {}); keep one", where, path, it->second);
    assign_node(*key, value, where, config);
    origins[path] = fmt::format("{}:{}", origin, line);
  };
  for (const auto& entry : root) {
    std::string name = entry.first.Scalar();
    if (!is_section(name)) {  // a flat "model.n_layers: 4" works too, like --set
      visit(name, entry.first, entry.second);
      continue;
    }
    const YAML::Node& body = entry.second;
    if (body.IsNull()) continue;  // "checkpoint:" with everything commented out
    if (!body.IsMap())
      fail("{}:{}: section '{}' must be a mapping of keys (e.g. '{}:' then indented 'key: value' lines), got {}",
           origin, line_of(entry.first), name, name, body.IsSequence() ? "a sequence" : "'" + body.Scalar() + "'");
    for (const auto& field : body) visit(name + "." + field.first.Scalar(), field.first, field.second);
  }
}

YAML::Node parse_yaml(const std::string& text, const std::string& origin) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    fail("{}:{}:{}: YAML syntax error: {}", origin, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read config file '{}': {}; check the path (configs/ holds the shipped ones)", path,
                std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

void config_apply_set(const std::string& assignment, Config& config) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    fail("--set '{}': expected the form key.path=value, e.g. --set optim.lr=3e-4", assignment);
  std::string path = assignment.substr(0, eq), raw = assignment.substr(eq + 1);
  const ConfigKey* key = config_key_find(path);
  if (!key) fail("--set '{}': unknown key '{}'{}", assignment, path, config_key_hint(path));
  std::string where = fmt::format("--set '{}': ", assignment);
  // The value is a YAML scalar: quotes are removed as in a file, and a flow
  // sequence or mapping is rejected as in a file. Anything else is taken
  // verbatim, so paths with ':' or '#' need no quoting on the command line.
  bool quoted = raw.size() >= 2 && (raw[0] == '"' || raw[0] == '\'') && raw.back() == raw[0];
  if (quoted || raw.starts_with('[') || raw.starts_with('{')) {
    assign_node(*key, parse_yaml(raw, "--set " + path), where, config);
  } else if (!config_key_set(*key, raw, config)) {
    fail("{}'{}' expects {}, got '{}'", where, key->path, config_key_expected(*key), raw);
  }
}

namespace {

// config_validate, with the message prefixed by where the most-to-blame key
// that the user actually gave was set.
void validate_with_origins(const Config& config, const Origins& origins) {
  try {
    config_validate(config);
  } catch (const ConfigKeyError& e) {
    for (const std::string& key : e.keys()) {
      auto it = origins.find(key);
      if (it != origins.end()) throw ConfigKeyError(e.keys(), it->second + ": " + e.what());
    }
    throw;
  }
}

}  // namespace

Config config_parse(const std::string& yaml_text, const std::string& origin) {
  Config config;
  Origins origins;
  apply_yaml(parse_yaml(yaml_text, origin), origin, config, origins);
  validate_with_origins(config, origins);
  return config;
}

Config config_load(const std::string& yaml_path, const std::vector<std::string>& sets) {
  Config config;
  Origins origins;
  if (!yaml_path.empty()) apply_yaml(parse_yaml(read_file(yaml_path), yaml_path), yaml_path, config, origins);
  for (const std::string& assignment : sets) {
    config_apply_set(assignment, config);
    origins[assignment.substr(0, assignment.find('='))] = fmt::format("--set '{}'", assignment);
  }
  validate_with_origins(config, origins);
  return config;
}

}  // namespace rfa
