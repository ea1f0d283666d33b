#include <doctest/doctest.h>

#include "config/config_keys.h"
#include "config/config_load.h"
#include "support/test_files.h"

using namespace rfa;
using rfa::test::temp_file;

TEST_CASE("config load: no file and no --set gives the defaults") {
  CHECK(config_load("", {}) == Config{});
}

TEST_CASE("config load: defaults < YAML file < --set, later --set wins") {
  std::string path = temp_file("precedence.yaml",
                               "model:\n"
                               "  n_layers: 6\n"
                               "  d_model: 192\n"
                               "optim:\n"
                               "  lr: 3e-4\n");
  Config c = config_load(path, {"model.n_layers=8", "train.steps=77", "train.steps=99"});
  CHECK(c.model.n_layers == 8);        // --set over the file
  CHECK(c.model.d_model == 192);       // file over the default
  CHECK(c.optim.lr == 3e-4);           // file over the default
  CHECK(c.train.steps == 99);          // the last --set wins
  CHECK(c.model.n_heads == Config{}.model.n_heads);  // untouched: the default
}

TEST_CASE("config load: every value type reads from YAML") {
  std::string path = temp_file("types.yaml",
                               "model:\n"
                               "  tie_embeddings: false\n"
                               "  norm_eps: 1.0e-6\n"
                               "attention:\n"
                               "  kind: softmax\n"
                               "  positions: none\n"
                               "  feature_map: arccos\n"
                               "tokenizer:\n"
                               "  kind: char\n"
                               "  max_sentences: 5000000000\n"
                               "data:\n"
                               "  corpus: \"some dir/with: colon.txt\"\n"
                               "train:\n"
                               "  seed: 18446744073709551615\n"
                               "checkpoint:\n");  // an empty section is allowed
  Config c = config_load(path, {});
  CHECK(c.model.tie_embeddings == false);
  CHECK(c.model.norm_eps == 1e-6);
  CHECK(c.attention.kind == AttentionKind::softmax);
  CHECK(c.attention.positions == PositionKind::none);
  CHECK(c.attention.feature_map == FeatureMapKind::arccos);
  CHECK(c.tokenizer.kind == TokenizerKind::character);
  CHECK(c.tokenizer.max_sentences == 5000000000LL);
  CHECK(c.data.corpus == "some dir/with: colon.txt");
  CHECK(c.train.seed == 18446744073709551615ULL);
}

TEST_CASE("config load: --set takes raw text, quoted text and flat keys in files") {
  Config c = config_load("", {"data.corpus=a/b: c#d.txt", "data.tokens=\"\"", "attention.kind=softmax",
                              "model.tie_embeddings=false", "optim.lr=1e-2"});
  CHECK(c.data.corpus == "a/b: c#d.txt");
  CHECK(c.data.tokens == "");
  CHECK(c.attention.kind == AttentionKind::softmax);
  CHECK(c.model.tie_embeddings == false);
  CHECK(c.optim.lr == 1e-2);

  std::string path = temp_file("flat.yaml", "model.n_layers: 3\n");
  CHECK(config_load(path, {}).model.n_layers == 3);
}

TEST_CASE("config load: a section with every key commented out is no error") {
  CHECK(config_load(temp_file("blank_section.yaml", "model:\n  # n_layers: 4\ntrain:\n  steps: 5\n"), {}).train.steps ==
        5);
}

TEST_CASE("config derived values: tokens path, tokenizer corpus, positions, ffn size") {
  Config c;
  c.data.corpus = "data/x.txt";
  CHECK(config_tokens_path(c.data) == "data/x.txt.tokens");
  c.data.tokens = "t.bin";
  CHECK(config_tokens_path(c.data) == "t.bin");
  CHECK(config_tokenizer_corpus(c) == "data/x.txt");
  c.tokenizer.corpus = "other.txt";
  CHECK(config_tokenizer_corpus(c) == "other.txt");
  c.attention.kind = AttentionKind::softmax;
  CHECK(config_positions(c.attention) == PositionKind::rope);
  c.attention.kind = AttentionKind::rfa_gate;
  CHECK(config_positions(c.attention) == PositionKind::none);
  c.model.d_model = 128;
  CHECK(config_ffn_hidden(c.model) == 352);  // 8/3 * 128 = 341.3 -> 352
}

TEST_CASE("config load: data.corpus and tokenizer.corpus take a YAML list, read as its paths joined by ','") {
  const Config flow =
      config_load(temp_file("flow_list.yaml", "data:\n  corpus: [a.txt, \"dir b/\", c.jsonl]\n  tokens: t\n"), {});
  CHECK(flow.data.corpus == "a.txt,dir b/,c.jsonl");
  const Config block = config_load(temp_file("block_list.yaml",
                                             "data:\n"
                                             "  corpus:\n"
                                             "    - a.txt\n"
                                             "    - dir b/   # a comment\n"
                                             "  tokens: t.tokens\n"
                                             "tokenizer:\n"
                                             "  corpus:\n"
                                             "  - x.txt\n"
                                             "  - y.txt\n"),
                                   {});
  CHECK(block.data.corpus == "a.txt,dir b/");
  CHECK(block.data.tokens == "t.tokens");
  CHECK(block.tokenizer.corpus == "x.txt,y.txt");
  // The comma-separated string stays, from a file and --set, and --set takes a flow list too.
  CHECK(config_load(temp_file("comma_list.yaml", "data: {corpus: \"a.txt,b.txt\", tokens: t}\n"), {}).data.corpus ==
        "a.txt,b.txt");
  CHECK(config_load("", {"data.corpus=a.txt,b.txt", "data.tokens=t"}).data.corpus == "a.txt,b.txt");
  CHECK(config_load("", {"data.corpus=[a.txt, b.txt]", "data.tokens=t"}).data.corpus == "a.txt,b.txt");
  // The dump prints the string, which loads back to the same config.
  const Config back = config_load(temp_file("list_dump.yaml", config_dump(block)), {});
  CHECK(back == block);
}

TEST_CASE("config load: the origins name where each given key came from, and only those") {
  const std::string path = temp_file("origins.yaml",
                                     "model:\n"
                                     "  context_length: 64\n"  // the default, given
                                     "train: {steps: 5}\n");
  const ConfigLoaded loaded = config_load_with_origins(path, {"optim.lr=1e-3"});
  CHECK(loaded.config == config_load(path, {"optim.lr=1e-3"}));
  CHECK(loaded.origins == ConfigOrigins{{"model.context_length", path + ":2"},
                                        {"train.steps", path + ":3"},
                                        {"optim.lr", "--set 'optim.lr=1e-3'"}});
  CHECK(config_origins_all("x").size() == config_keys().size());
}
