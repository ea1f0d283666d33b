// Reading: YAML files and text, and --set assignments, onto a Config through
// the key table. The only file in the project that includes yaml-cpp's parser.
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <vector>

#include "config/config_error.h"
#include "config/config_keys.h"
#include "config/config_load.h"
#include "config/config_yaml_precheck.h"
#include "core/error.h"
#include "io/file_io.h"

namespace rfa {
namespace {

// Where each key's value came from ("configs/x.yaml:7", "--set 'a=b'"), so a
// validation error can point at it (and --init-from can tell a given key from one left out).
using Origins = ConfigOrigins;

int line_of(const YAML::Node& node) { return node.Mark().is_null() ? 0 : node.Mark().line + 1; }

const char* node_kind(const YAML::Node& node) { return node.IsSequence() ? "a sequence" : "a mapping"; }

// "n_layers" of "model.n_layers": how the key is written inside its section.
std::string_view leaf_of(const ConfigKey& key) {
  const std::string_view path(key.path);
  return path.substr(path.find('.') + 1);
}

bool is_section(const std::string& name) {
  auto sections = config_sections();
  return std::find(sections.begin(), sections.end(), name) != sections.end();
}

// A list key given as a YAML sequence ('corpus: [a.txt, b.txt]' or '- a.txt' lines): its entries
// joined by ',', the value's one form, so --set, the dump and resume see the same string.
void assign_list(const ConfigKey& key, const YAML::Node& value, const std::string& where, Config& config) {
  std::string joined;
  for (const YAML::Node& entry : value) {
    if (!entry.IsScalar() || entry.Scalar().empty())
      fail("{}'{}' is a list whose entries are paths, got {}", where, key.path,
           entry.IsScalar() || entry.IsNull() ? "an empty entry" : std::string(node_kind(entry)));
    if (entry.Scalar().find(',') != std::string::npos)
      fail("{}'{}' lists the path '{}', which holds a ',': the paths of a list are joined by ',', so it would read as "
           "several; rename the file",
           where, key.path, entry.Scalar());
    joined += (joined.empty() ? "" : ",") + entry.Scalar();
  }
  if (joined.empty())
    fail("{}'{}' is an empty list; give at least one path, e.g. '{}: [data/a.txt]'", where, key.path, leaf_of(key));
  config_key_set(key, joined, config);  // a string: always parses
}

// Assigns one YAML value node to a known key. `where` is "file:line: ". A null ('steps:' with
// nothing after it, '~', 'null') is no value: for a number it once read as '', for a path as the
// empty string, neither of which anyone means; '""' gives an empty string.
void assign_node(const ConfigKey& key, const YAML::Node& value, const std::string& where, Config& config) {
  if (value.IsNull()) {
    std::string fallback = config_key_get(key, Config{});
    if (std::holds_alternative<FieldRef<std::string>>(key.field)) fallback = "\"" + fallback + "\"";
    fail("{}'{}' has no value (nothing after its ':', or null); give it one on the same line, e.g. '{}: {}' (the "
         "default), or delete the line to keep the default",
         where, key.path, leaf_of(key), fallback);
  }
  if (key.allowed.list && value.IsSequence()) {
    assign_list(key, value, where, config);
    return;
  }
  if (!value.IsScalar())
    fail("{}'{}' expects {}, got {}", where, key.path, config_key_expected(key), node_kind(value));
  const std::string& text = value.Scalar();
  if (!config_key_set(key, text, config))
    fail("{}'{}' expects {}, got '{}'", where, key.path, config_key_expected(key), text);
}

// yaml-cpp keeps every entry of a mapping, repeats included, so a key or a
// section given twice is caught here as the entries are walked.
void apply_yaml(const YAML::Node& root, const std::string& origin, Config& config, Origins& origins) {
  if (!root.IsMap())
    fail("{}:{}: a config file is a mapping of sections (model:, attention:, ...), got {}", origin,
         line_of(root), root.IsSequence() ? "a sequence" : "a single value");
  std::map<std::string, int> first_line;     // key path -> line, to catch a key given twice
  std::map<std::string, int> section_line;   // section -> line of its header, to catch a second block
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
    auto [first, fresh] = section_line.emplace(name, line_of(entry.first));
    if (!fresh)
      fail("{}:{}: section '{}:' is given twice (first on line {}); merge the two blocks into one", origin,
           line_of(entry.first), name, first->second);
    const YAML::Node& body = entry.second;
    if (body.IsNull()) continue;  // "checkpoint:" with everything commented out
    if (!body.IsMap())
      fail("{}:{}: section '{}' must be a mapping of keys (e.g. '{}:' then indented 'key: value' lines), got {}",
           origin, line_of(entry.first), name, name, body.IsSequence() ? "a sequence" : "'" + body.Scalar() + "'");
    for (const auto& field : body) visit(name + "." + field.first.Scalar(), field.first, field.second);
  }
}

// yaml-cpp's depth guard says only "bad file".
[[noreturn]] void fail_too_deep(const std::string& origin, const YAML::DeepRecursion& e) {
  fail("{}:{}:{}: YAML nested {} levels deep, past the parser's limit; a config nests two (section, then "
       "'key: value')",
       origin, e.mark.line + 1, e.mark.column + 1, e.depth());
}

YAML::Node parse_yaml(const std::string& text, const std::string& origin) {
  try {
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    fail_too_deep(origin, e);
  } catch (const YAML::ParserException& e) {
    fail("{}:{}:{}: YAML syntax error: {}", origin, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
}

// The line (1-based) where the second of several YAML documents starts: its
// '---' marker. The document's own mark is used when it has one (an empty
// document has none).
int second_document_line(const std::string& text, const YAML::Mark& second) {
  std::vector<int> markers;  // lines that start a document ("---" alone or before content)
  bool content_before_marker = false;
  int line = 0;
  for (size_t at = 0; at < text.size(); ++line) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view row(text.data() + at, end - at);
    if (row.starts_with("---") && (row.size() == 3 || row[3] == ' ' || row[3] == '\t' || row[3] == '\r'))
      markers.push_back(line + 1);
    else if (markers.empty() && !row.empty() && row[0] != '#' && row.find_first_not_of(" \t\r") != std::string::npos)
      content_before_marker = true;
    at = end + 1;
  }
  const int mark = second.is_null() ? 0 : second.line + 1;
  if (mark > 0) {
    int best = mark;
    for (int m : markers)
      if (m <= mark) best = m;
    return best;
  }
  // The first document is implicit when content precedes the first marker.
  size_t index = content_before_marker ? 0 : 1;
  return index < markers.size() ? markers[index] : 1;
}

// The documents of a YAML text as parse events, keeping each one's root node mark (null
// for a document without a node). Used instead of YAML::LoadAll to stop after the second
// document: yaml-cpp 0.7's LoadAll never returns on a text starting with a stray ',' (it
// yields empty documents without end until memory runs out; found by fuzzing).
class DocumentRoots : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> roots;

  void OnDocumentStart(const YAML::Mark&) override { roots.push_back(YAML::Mark::null_mark()); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { node(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& m) {
    if (!roots.empty() && roots.back().is_null()) roots.back() = m;
  }
};

// A config file is exactly one non-empty YAML mapping.
YAML::Node parse_config_file(const std::string& raw_text, const std::string& origin) {
  const std::string text = config_yaml_precheck(raw_text, origin);  // what yaml-cpp accepts too leniently
  DocumentRoots documents;
  YAML::Node root;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (documents.roots.size() < 2 && parser.HandleNextDocument(documents)) {
    }
    if (documents.roots.size() == 1) root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    fail_too_deep(origin, e);
  } catch (const YAML::ParserException& e) {
    fail("{}:{}:{}: YAML syntax error: {}", origin, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
  if (documents.roots.size() > 1 && !documents.roots[1].is_null() && documents.roots[1].pos == documents.roots[0].pos) {
    // The parser did not move: the stray-',' case above (a real second document starts later).
    const YAML::Mark& m = documents.roots[1];
    const size_t at = static_cast<size_t>(m.pos);
    fail("{}:{}:{}: YAML syntax error: unexpected '{}'", origin, m.line + 1, m.column + 1,
         at < text.size() ? text.substr(at, 1) : std::string());
  }
  if (documents.roots.size() > 1)
    fail("{}:{}: a second YAML document starts here ('---'), and a config file holds one; move its keys into the "
         "first document and delete the '---' line",
         origin, second_document_line(text, documents.roots[1]));
  if (documents.roots.empty() || root.IsNull())
    fail("{}: the config file is empty (only blank lines or comments); give it at least one key, e.g. "
         "'model:' then '  n_layers: 4' (configs/ holds complete examples)",
         origin);
  return root;
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail("config file '{}' is a directory; give a YAML file, e.g. --config configs/shakespeare-char-rfa-gate.yaml "
         "(configs/ holds the shipped ones)",
         path);
  // A pipe or terminal works too (--config <(envsubst < x.yaml), --config /dev/stdin), read to its
  // end; an idle FIFO reads as empty instead of waiting (file_read_user_text).
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    return file_read_user_text(path, "config file");
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
  apply_yaml(parse_config_file(yaml_text, origin), origin, config, origins);
  validate_with_origins(config, origins);
  return config;
}

ConfigLoaded config_load_with_origins(const std::string& yaml_path, const std::vector<std::string>& sets) {
  ConfigLoaded loaded;
  Config& config = loaded.config;
  Origins& origins = loaded.origins;
  if (!yaml_path.empty())
    apply_yaml(parse_config_file(read_file(yaml_path), yaml_path), yaml_path, config, origins);
  for (const std::string& assignment : sets) {
    config_apply_set(assignment, config);
    origins[assignment.substr(0, assignment.find('='))] = fmt::format("--set '{}'", assignment);
  }
  validate_with_origins(config, origins);
  return loaded;
}

ConfigOrigins config_origins_all(const std::string& origin) {
  ConfigOrigins origins;
  for (const ConfigKey& key : config_keys()) origins[key.path] = origin;
  return origins;
}

}  // namespace rfa
