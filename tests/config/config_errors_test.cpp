// Every user mistake must produce a message naming the key, the value, the
// line where there is one, and what would be accepted.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <thread>

#include "config/config_keys.h"
#include "config/config_load.h"
#include "support/test_files.h"

using namespace rfa;
using rfa::test::error_of;
using rfa::test::has;
using rfa::test::temp_file;

namespace {
std::string load_error(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  std::string path = temp_file("error.yaml", yaml);
  return error_of([&] { config_load(path, sets); });
}
std::string set_error(const std::string& assignment) {
  return error_of([&] { config_load("", {assignment}); });
}
}  // namespace

TEST_CASE("config errors: an unknown key in a file names the file, line and closest key") {
  std::string path = temp_file("unknown.yaml",
                               "# comment\n"
                               "model:\n"
                               "  d_model: 128\n"
                               "\n"
                               "  n_layer: 4\n");
  std::string e = error_of([&] { config_load(path, {}); });
  CHECK(has(e, path + ":5: unknown key 'model.n_layer'; did you mean 'model.n_layers'?"));
}

TEST_CASE("config errors: suggestions find keys in another section and misspelt sections") {
  CHECK(has(load_error("train:\n  lr: 0.1\n"), ":2: unknown key 'train.lr'; did you mean 'optim.lr'?"));
  CHECK(has(load_error("lr: 0.1\n"), ":1: unknown key 'lr'; did you mean 'optim.lr'?"));
  CHECK(has(load_error("modle:\n  n_layers: 4\n"), ":1: unknown key 'modle'; did you mean 'model'?"));
  // Nothing close: list what the section holds.
  std::string e = load_error("checkpoint:\n  zzzzzzzzzzzzz: 1\n");
  CHECK(has(e, "unknown key 'checkpoint.zzzzzzzzzzzzz'; valid keys in 'checkpoint' are: every, keep_last, keep_best"));
}

TEST_CASE("config errors: an unknown --set key gets a suggestion and no line") {
  std::string e = set_error("attention.num_feature=8");
  CHECK(has(e, "--set 'attention.num_feature=8': unknown key 'attention.num_feature'; did you mean "
               "'attention.num_features'?"));
}

TEST_CASE("config errors: a --set without '=' says the expected form") {
  CHECK(has(set_error("model.n_layers"), "--set 'model.n_layers': expected the form key.path=value"));
  CHECK(has(set_error("=4"), "expected the form key.path=value"));
}

TEST_CASE("config errors: wrong types name the key, the value and the expected type") {
  CHECK(has(load_error("model:\n  n_layers: four\n"), ":2: 'model.n_layers' expects an integer in [1, 1024], got 'four'"));
  CHECK(has(load_error("optim:\n  lr: [1]\n"), ":2: 'optim.lr' expects a number, got a sequence"));
  CHECK(has(load_error("optim:\n  lr: {a: 1}\n"), "'optim.lr' expects a number, got a mapping"));
  CHECK(has(load_error("model:\n  n_layers: 2.5\n"), "'model.n_layers' expects an integer in [1, 1024], got '2.5'"));
  CHECK(has(load_error("model:\n  n_layers: 99999999999\n"),
            "'model.n_layers' expects an integer in [1, 1024], got '99999999999'"));
  CHECK(has(load_error("train:\n  steps: 99999999999999999999\n"),
            "'train.steps' expects an integer in [1, 2^63-1], got '99999999999999999999'"));
  CHECK(has(load_error("model:\n  tie_embeddings: maybe\n"), "'model.tie_embeddings' expects true or false, got 'maybe'"));
  CHECK(has(load_error("train:\n  seed: -1\n"), "'train.seed' expects an integer in [0, 2^64-1], got '-1'"));
  CHECK(has(set_error("train.seed=18446744073709551616"),
            "'train.seed' expects an integer in [0, 2^64-1], got '18446744073709551616'"));
  CHECK(config_load("", {"train.seed=18446744073709551615"}).train.seed == UINT64_MAX);
  CHECK(has(load_error("optim:\n  lr: .inf\n"), "'optim.lr' expects a number, got '.inf'"));
  CHECK(has(load_error("model: 4\n"), ":1: section 'model' must be a mapping of keys"));
  CHECK(has(load_error("- a\n- b\n"), "a config file is a mapping of sections"));
  CHECK(has(set_error("optim.lr=fast"), "--set 'optim.lr=fast': 'optim.lr' expects a number, got 'fast'"));
  CHECK(has(set_error("optim.lr=[1]"), "'optim.lr' expects a number, got a sequence"));
}

TEST_CASE("config errors: a list is for the path-list keys only, and holds paths") {
  CHECK(has(load_error("data:\n  tokens: [a, b]\n"), ":2: 'data.tokens' expects a string, got a sequence"));
  CHECK(has(load_error("data:\n  corpus: []\n"), ":2: 'data.corpus' is an empty list; give at least one path"));
  CHECK(has(load_error("data:\n  corpus: [a.txt, [b.txt]]\n"),
            ":2: 'data.corpus' is a list whose entries are paths, got a sequence"));
  CHECK(has(load_error("data:\n  corpus: [a.txt, \"\"]\n"),
            "'data.corpus' is a list whose entries are paths, got an empty entry"));
  CHECK(has(load_error("data:\n  corpus: [\"a,b.txt\"]\n"), "lists the path 'a,b.txt', which holds a ','"));
  CHECK(has(set_error("data.corpus=[]"), "--set 'data.corpus=[]': 'data.corpus' is an empty list"));
}

TEST_CASE("config errors: unknown enum values list the allowed ones") {
  CHECK(has(load_error("attention:\n  kind: rfa-gate\n"),
            ":2: 'attention.kind' expects one of softmax|rfa|rfa_gate|rfa_delta, got 'rfa-gate'"));
  CHECK(has(set_error("attention.feature_map=relu"), "'attention.feature_map' expects one of gaussian|arccos, got 'relu'"));
  CHECK(has(set_error("attention.positions=alibi"), "'attention.positions' expects one of auto|rope|none, got 'alibi'"));
  CHECK(has(set_error("tokenizer.kind=word"), "'tokenizer.kind' expects one of bpe|unigram|char, got 'word'"));
}

TEST_CASE("config errors: a key given twice names both lines") {
  CHECK(has(load_error("model:\n  n_layers: 2\n  n_layers: 3\n"),
            ":3: key 'model.n_layers' is given twice (first on line 2)"));
}

TEST_CASE("config errors: impossible values name the key, the value and what is allowed") {
  CHECK(has(set_error("model.n_heads=5"), "'model.n_heads' is 5, which does not divide 'model.d_model' = 128; "
                                          "heads that divide it: 1, 2, 4, 8, 16, 32, 64, 128"));
  CHECK(has(set_error("model.n_layers=0"), "'model.n_layers' is '0'; it must be in [1, 1024]"));
  CHECK(has(set_error("model.d_model=-8"), "'model.d_model' is '-8'; it must be in [1, 65536]"));
  CHECK(has(set_error("train.batch_size=0"), "'train.batch_size' is '0'; it must be >= 1"));
  CHECK(has(set_error("attention.chunk_size=0"), "'attention.chunk_size' is '0'; it must be in [1, 2^20]"));
  CHECK(has(set_error("data.val_fraction=0"), "'data.val_fraction' is '0.0'; it must be in (0, 1)"));
  CHECK(has(set_error("data.val_fraction=1"), "'data.val_fraction' is '1.0'; it must be in (0, 1)"));
  CHECK(has(set_error("optim.lr=0"), "'optim.lr' is '0.0'; it must be > 0"));
  CHECK(has(set_error("optim.beta2=1"), "'optim.beta2' is '1.0'; it must be in [0, 1)"));
  CHECK(has(set_error("tokenizer.vocab_size=100"), "'tokenizer.vocab_size' is '100'; it must be in [260, 2^24]"));
  CHECK(has(set_error("data.corpus="), "'data.corpus' is ''; it must be non-empty"));
  CHECK(has(load_error("optim:\n  lr: 1e-4\n  lr_min: 1e-3\n"),
            "'optim.lr_min' is 0.001, above 'optim.lr' = 0.0001"));
  CHECK(has(load_error("model:\n  d_model: 96\n  n_heads: 32\nattention:\n  kind: softmax\n"),
            "head size d_model / n_heads = 96 / 32 = 3 is odd"));
  CHECK(has(load_error("model:\n  vocab_size: 100\n"), "'model.vocab_size' is 100, smaller than 'tokenizer.vocab_size'"));
  CHECK(has(load_error("attention:\n  kind: softmax\ntrain:\n  stateful: true\n"),
            "'train.stateful' is true but 'attention.kind' is softmax, which has no fixed-size state"));
  CHECK(has(load_error("attention:\n  positions: rope\ntrain:\n  stateful: true\n"),
            "'train.stateful' is true but 'attention.positions' resolves to rope"));
  CHECK(has(set_error("train.stateful_redraw=-1"), "'train.stateful_redraw' is '-1'; it must be >= 0"));
  CHECK(has(set_error("train.stateful_redraw=5"),
            "'train.stateful_redraw' is 5 but 'train.stateful' is false: the redraw period applies to stateful"));
}

TEST_CASE("config errors: document and instruction data: what is not available says what is") {
  // The attention restarts at a document's first token for every format and packing; only the
  // carried streams of stateful training do not mark documents.
  CHECK_NOTHROW(config_load("", {"data.format=jsonl", "data.document_boundaries=reset"}));
  CHECK_NOTHROW(config_load("", {"data.format=alpaca", "data.packing=pack", "data.document_boundaries=reset"}));
  CHECK_NOTHROW(config_load("", {"data.format=text", "data.document_boundaries=reset"}));
  CHECK_NOTHROW(config_load("", {"data.format=alpaca", "data.document_boundaries=reset"}));
  CHECK(has(load_error("data:\n  document_boundaries: reset\ntrain:\n  stateful: true\n"),
            "'data.document_boundaries' is reset but 'train.stateful' is true: the carried streams do not mark "
            "where documents start"));
  CHECK(has(load_error("data:\n  format: prompt_completion\ntrain:\n  stateful: true\n"),
            "'train.stateful' is true but 'data.format' is prompt_completion"));
  CHECK(has(set_error("data.format=json"), "'data.format' expects one of text|jsonl|alpaca|prompt_completion"));
  CHECK(has(set_error("data.corpus=a.txt,b.txt"),
            "'data.corpus' lists several paths ('a.txt,b.txt') and 'data.tokens' is empty"));
}

TEST_CASE("config errors: the bounds of every key reject a value just outside them") {
  // Drives the table itself, so a bound added later is covered too.
  for (const ConfigKey& key : config_keys()) {
    const ConfigAllowed& a = key.allowed;
    if (!std::isfinite(a.min)) continue;
    std::string below = a.min_open ? fmt::format("{}", a.min) : fmt::format("{}", a.min - 1);
    std::string e = set_error(std::string(key.path) + "=" + below);
    CHECK_MESSAGE(has(e, std::string("'") + key.path + "' is"), key.path);
  }
}

TEST_CASE("config errors: absurd sizes are refused by the key's bound before any arithmetic") {
  // Each of these once overflowed a 32-bit product or allocated for a minute before failing.
  CHECK(has(set_error("model.d_model=1000000000"), "'model.d_model' is '1000000000'; it must be in [1, 65536]"));
  CHECK(has(set_error("model.ffn_hidden=2000000000"), "'model.ffn_hidden' is '2000000000'; it must be in [0, 2^20]"));
  CHECK(has(set_error("model.n_layers=100000"), "'model.n_layers' is '100000'; it must be in [1, 1024]"));
  CHECK(has(set_error("train.grad_accum=1000000000"), "'train.grad_accum' is '1000000000'; it must be in [1, 65536]"));
  CHECK(has(set_error("model.vocab_size=16777217"), "'model.vocab_size' is '16777217'; it must be in [0, 2^24]"));
}

TEST_CASE("config errors: every upper bound is inclusive, and one past it is refused") {
  for (const ConfigKey& key : config_keys()) {
    const ConfigAllowed& a = key.allowed;
    if (!std::isfinite(a.max) || a.max_open || a.max != std::floor(a.max) || a.max < 2) continue;
    const std::string at = fmt::format("{}={}", key.path, static_cast<int64_t>(a.max));
    CHECK_MESSAGE(config_load("", {at}) != Config{}, at);  // accepted, and it changed something
    const std::string e = set_error(fmt::format("{}={}", key.path, static_cast<int64_t>(a.max) + 1));
    CHECK_MESSAGE(has(e, std::string("'") + key.path + "' is"), key.path);
  }
}

TEST_CASE("config errors: bounds and types print readably, never as a 300-digit number") {
  for (const ConfigKey& key : config_keys()) {
    for (const std::string& text : {config_key_allowed_text(key), config_key_expected(key)}) {
      size_t run = 0, longest = 0;
      for (char ch : text) longest = std::max(longest, run = std::isdigit(static_cast<unsigned char>(ch)) ? run + 1 : 0);
      CHECK_MESSAGE(longest <= 10, key.path << ": " << text);
    }
  }
}

TEST_CASE("config errors: a section given twice names both lines") {
  CHECK(has(load_error("model:\n  n_layers: 2\ntrain:\n  steps: 5\nmodel:\n  d_model: 64\n"),
            ":5: section 'model:' is given twice (first on line 1); merge the two blocks into one"));
  // The same key in two blocks: the section is reported first, at the second block.
  CHECK(has(load_error("model:\n  n_layers: 2\nmodel:\n  n_layers: 3\n"), ":3: section 'model:' is given twice"));
  // A flat key and the same key in a section.
  CHECK(has(load_error("model.n_layers: 2\nmodel:\n  n_layers: 3\n"),
            ":3: key 'model.n_layers' is given twice (first on line 1)"));
}

TEST_CASE("config errors: a file of several YAML documents names the line of the second") {
  const std::string second = "a second YAML document starts here ('---'), and a config file holds one";
  std::string path = temp_file("multi.yaml", "model:\n  n_layers: 2\n---\nmodel:\n  d_model: 64\n");
  CHECK(has(error_of([&] { config_load(path, {}); }), path + ":3: " + second));
  CHECK(has(load_error("---\nmodel:\n  n_layers: 2\n---\n"), ":4: " + second));  // empty second document
  CHECK(has(load_error("# header\nmodel:\n  n_layers: 2\n--- # next\ntrain:\n  steps: 3\n"), ":4: " + second));
  // One document with its explicit start and end markers is fine.
  CHECK(config_load(temp_file("one_doc.yaml", "---\nmodel:\n  n_layers: 2\n...\n"), {}).model.n_layers == 2);
}

TEST_CASE("config errors: an empty file and a directory are refused by name") {
  for (const char* text : {"", "\n\n", "# only a comment\n", "---\n"}) {
    std::string path = temp_file("empty.yaml", text);
    CHECK(has(error_of([&] { config_load(path, {}); }), path + ": the config file is empty"));
  }
  std::string dir = std::filesystem::path(temp_file("in_dir.yaml", "model:\n  n_layers: 2\n")).parent_path().string();
  CHECK(has(error_of([&] { config_load(dir, {}); }), "config file '" + dir + "' is a directory; give a YAML file"));
  // A FIFO with no writer blocked the read forever: now it reads as empty at once.
  const std::string fifo = dir + "/config.fifo";
  std::filesystem::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(has(error_of([&] { config_load(fifo, {}); }), fifo + ": the config file is empty"));
  std::filesystem::remove(fifo);
}

TEST_CASE("config: a pipe is read to its end (--config <(cmd), --config /dev/stdin)") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string yaml = "model:\n  n_layers: 3\n" + std::string(100000, '#') + "\n";  // past one pipe buffer
  std::thread writer([&] {
    for (size_t done = 0; done < yaml.size();) {
      ssize_t n = ::write(fds[1], yaml.data() + done, yaml.size() - done);
      if (n <= 0) break;
      done += size_t(n);
    }
    ::close(fds[1]);
  });
  Config c;
  const std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
  CHECK_NOTHROW(c = config_load(path, {}));
  writer.join();
  ::close(fds[0]);
  CHECK(c.model.n_layers == 3);
}

TEST_CASE("config errors: nesting past the parser's depth limit says so (it was 'bad file')") {
  std::string deep = "model: " + std::string(5000, '[');
  std::string e = error_of([&] { config_load(temp_file("deep.yaml", deep), {}); });
  CHECK(has(e, "levels deep, past the parser's limit; a config nests two"));
  e = error_of([&] { config_load("", {"model.n_layers=" + std::string(5000, '[')}); });
  CHECK(has(e, "--set model.n_layers:1:1: YAML nested"));
}

TEST_CASE("config errors: a missing file and a YAML syntax error") {
  std::string e = error_of([] { config_load("/nonexistent/dir/cfg.yaml", {}); });
  CHECK(has(e, "cannot read config file '/nonexistent/dir/cfg.yaml': No such file or directory"));
  std::string path = temp_file("syntax.yaml", "model:\n  n_layers: 4\n  d_model: [1, 2\n");
  e = error_of([&] { config_load(path, {}); });
  CHECK(has(e, path + ":"));
  CHECK(has(e, "YAML syntax error"));
  CHECK(has(e, ":4:"));  // yaml-cpp reports the unclosed flow sequence at the end of input
  e = error_of([] { config_parse("model:\n\tn_layers: 4\n", "checkpoint dump"); });
  CHECK(has(e, "checkpoint dump:2:"));
}

TEST_CASE("config errors: a file starting with a stray ',' is a syntax error, not an endless parse") {
  // Found by fuzzing (tests/fuzz/corpus/config/timeout-stray-comma): yaml-cpp 0.7's LoadAll
  // yields empty documents for ever on such a text, until memory runs out.
  for (const char* text : {",", ", a\n", ",\nmodel:\n  n_layers: 2\n"}) {
    CAPTURE(text);
    CHECK(has(error_of([&] { config_parse(text, "comma.yaml"); }), "comma.yaml:1:1: YAML syntax error: unexpected ','"));
  }
}

TEST_CASE("config errors: an impossible value points at the line or --set that gave it") {
  std::string path = temp_file("origin.yaml", "model:\n  d_model: 100\n  n_heads: 3\ndata:\n  val_fraction: 2\n");
  std::string e = error_of([&] { config_load(path, {"data.val_fraction=0.5"}); });
  CHECK(has(e, path + ":3: 'model.n_heads' is 3, which does not divide 'model.d_model' = 100"));
  e = error_of([&] { config_load(path, {"model.n_heads=4"}); });
  CHECK(has(e, path + ":5: 'data.val_fraction' is '2.0'; it must be in (0, 1)"));
  e = error_of([&] { config_load(path, {"model.n_heads=4", "data.val_fraction=0.5", "optim.lr=1e-5"}); });
  CHECK(has(e, "--set 'optim.lr=1e-5': 'optim.lr_min' is 0.0001, above 'optim.lr' = 1e-05"));
  // A default that becomes impossible through another key still names both keys.
  e = error_of([] { config_load("", {"model.d_model=130"}); });
  CHECK(has(e, "--set 'model.d_model=130': 'model.n_heads' is 4, which does not divide 'model.d_model' = 130"));
}
