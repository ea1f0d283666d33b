// What yaml-cpp reads leniently, refused before it parses (config/config_yaml_precheck.h), each
// with the file, the line and the key; and the YAML around those corners that stays accepted.
#include <doctest/doctest.h>

#include "config/config_load.h"
#include "config/config_yaml_precheck.h"
#include "support/test_files.h"

using namespace rfa;
using rfa::test::error_of;
using rfa::test::has;
using rfa::test::temp_file;

namespace {
// The error of loading `yaml` from a file, with the file's path in front of `part`.
bool refused(const std::string& yaml, const std::string& part) {
  const std::string path = temp_file("precheck.yaml", yaml);
  return has(error_of([&] { config_load(path, {}); }), path + part);
}
Config loaded(const std::string& yaml) { return config_load(temp_file("precheck_ok.yaml", yaml), {}); }
}  // namespace

TEST_CASE("config precheck: an unclosed quote names the line and the key instead of swallowing the next key") {
  // The newcomer's file: yaml-cpp gave run_dir 'runs/a steps: 5 ' and steps 2000.
  CHECK(refused("train:\n  run_dir: \"runs/a\n  steps: 5\n",
                ":2: the quote (\") opened here for the value of 'train.run_dir' is never closed, so YAML would read "
                "the rest of the file into it ('steps: 5' included); close it on line 2"));
  CHECK(refused("train:\n  run_dir: 'runs/a\n  steps: 5\n", ":2: the quote (') opened here for the value of "
                                                             "'train.run_dir' is never closed"));
  CHECK(refused("train.run_dir: \"runs/a\n", ":1: the quote (\") opened here for the value of 'train.run_dir'"));
  CHECK(refused("train: {run_dir: \"runs/a, steps: 5}\n", ":1: the quote (\") opened here for the value of "
                                                          "'train.run_dir' is never closed"));
  CHECK(refused("model:\n  n_layers: 2\n\"train.steps: 5\n", ":3: the quote (\") opened here is never closed"));
  // A backslash before the closing quote escapes it: say so.
  CHECK(has(error_of([] { config_parse("data:\n  corpus: \"C:\\texts\\\"\n", "t"); }),
            "t:2: the quote (\") opened here for the value of 'data.corpus' is never closed, so YAML would read the rest "
            "of the file into it; close it on line 2 (inside double quotes \\\" is a quote character, not the end"));
}

TEST_CASE("config precheck: a quote that closes on a later line is refused too: a config value is one line") {
  CHECK(refused("train:\n  run_dir: \"runs/a\n  steps: 5\"\n  seed: 3\n",
                ":2: the quote (\") opened here for the value of 'train.run_dir' closes only on line 3, so YAML would "
                "join the lines between into that value ('steps: 5\"' included); a config value is one line: close "
                "the quote on line 2"));
}

TEST_CASE("config precheck: quotes that close on their line, and quote characters that open nothing, are fine") {
  Config c = loaded("train:\n  run_dir: 'it''s' # a comment's quote\n  seed: 3\n");
  CHECK(c.train.run_dir == "it's");
  CHECK(c.train.seed == 3);
  CHECK(loaded("train:\n  run_dir: \"a \\\" # b\"\n").train.run_dir == "a \" # b");
  CHECK(loaded("train:\n  run_dir: it\"s\n  steps: 5\n").train.run_dir == "it\"s");  // inside a plain scalar
  CHECK(loaded("train: {\"steps\":5, run_dir: \"x\"}\n").train.steps == 5);           // JSON-style flow
  CHECK(loaded("\"train.steps\": 7\n").train.steps == 7);
}

TEST_CASE("config precheck: a tab in the indentation is refused by line; a tab elsewhere is fine") {
  CHECK(refused("model:\n\tn_layers: 3\n", ":2: a tab in the indentation; YAML indents with spaces only: replace the "
                                          "tab with spaces"));
  CHECK(refused("model:\n  n_layers: 3\n \td_model: 64\n", ":3: a tab in the indentation"));
  CHECK(refused("\ttrain:\n  steps: 5\n", ":1: a tab in the indentation"));
  // Blank lines and comments holding tabs mean nothing (yaml-cpp refused them: "illegal tab").
  Config c = loaded("model:\n  n_layers:\t3\t# tab-separated\n\t\n \t# an indented comment\n  d_model: 64\n");
  CHECK(c.model.n_layers == 3);
  CHECK(c.model.d_model == 64);
  CHECK(config_yaml_precheck("a: 1\n\t\n", "x") == "a: 1\n \n");  // the same length, so every mark stays
  // Inside a flow mapping continued on the next line, a tab is only separation.
  CHECK(loaded("train: {run_dir: a,\n\tsteps: 5}\n").train.steps == 5);
}

TEST_CASE("config precheck: a key with no value is refused naming the key and its default") {
  CHECK(refused("train:\n  steps:\n", ":2: 'train.steps' has no value (nothing after its ':', or null); give it one "
                                      "on the same line, e.g. 'steps: 2000' (the default), or delete the line"));
  CHECK(refused("model:\n  n_layers: ~\n", ":2: 'model.n_layers' has no value"));
  CHECK(refused("optim:\n  lr: null\n", ":2: 'optim.lr' has no value"));
  CHECK(refused("train:\n  run_dir:\n  steps: 5\n", ":2: 'train.run_dir' has no value (nothing after its ':', or "
                                                    "null); give it one on the same line, e.g. 'run_dir: "
                                                    "\"runs/default\"'"));
  CHECK(refused("data:\n  tokens:\n", ":2: 'data.tokens' has no value"));
  CHECK(refused("train: {steps: }\n", ":1: 'train.steps' has no value"));
  // An empty string is written as one; a section with every key commented out stays fine.
  CHECK(loaded("data:\n  tokens: \"\"\ncheckpoint:\n  # every: 5\n").data.tokens.empty());
}

TEST_CASE("config precheck: a line YAML would join to the value before it is refused by line") {
  // Plain scalars continue on more-indented lines: 'my text.txt', 'runs/a steps 5'.
  CHECK(refused("data:\n  corpus: my\n     text.txt\n",
                ":3: this line ('text.txt') is indented under 'data.corpus' on line 2, which has a value, so YAML "
                "would take it as more of that value; a config value is one line"));
  CHECK(refused("train:\n  run_dir: runs/a\n   steps 5\n", ":3: this line ('steps 5') is indented under "
                                                           "'train.run_dir' on line 2"));
  CHECK(refused("train:\n  run_dir: runs/a\n    steps: 5\n", ":3: this line ('steps: 5') is indented under "
                                                            "'train.run_dir' on line 2"));
  CHECK(refused("train:\n  run_dir: \"runs/a\"\n    steps: 5\n", ":3: this line ('steps: 5') is indented under"));
  // A line without ': ' is a plain scalar that runs into the next line's key.
  CHECK(refused("train:\n  steps 5\n  run_dir: x\n",
                ":2: 'steps 5' is not a 'key: value' line (no ':' followed by a space ends a key in it), so YAML "
                "would join it to the lines around it, swallowing their keys; did you mean 'steps: 5'?"));
  CHECK(refused("train:\n  run_dir: x\n  steps:5\n", ":3: 'steps:5' is not a 'key: value' line"));
  CHECK(has(error_of([] { config_parse("train:\n  run_dir: x\n  steps:5\n", "t"); }), "did you mean 'steps: 5'?"));
  // In a flow mapping, a value runs on until a ',' or the closing bracket.
  CHECK(refused("train: {run_dir: a\n  steps: 5}\n",
                ":2: the value of 'train.run_dir' on line 1 goes on here ('steps: 5}') without a ',' between them"));
  // A block scalar is a value of several lines.
  CHECK(refused("train:\n  run_dir: |\n    runs/a\n", ":2: '|' starts a block scalar, a value of several lines for "
                                                     "'train.run_dir'; a config value is one line"));
}

TEST_CASE("config precheck: a value alone on the line after its key, and flow mappings over lines, are fine") {
  CHECK(loaded("train:\n  run_dir:\n    runs/a\n  steps: 5\n").train.run_dir == "runs/a");
  CHECK(refused("train:\n  run_dir:\n    runs/a\n    more\n", ":4: this line ('more') is indented under "
                                                             "'train.run_dir' on line 3"));
  Config c = loaded("train: {run_dir: a,\n        steps: 5}\noptim: {lr: 0.01\n  , warmup_steps: 3}\n");
  CHECK(c.train.run_dir == "a");
  CHECK(c.train.steps == 5);
  CHECK(c.optim.warmup_steps == 3);
}
