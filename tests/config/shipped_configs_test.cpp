// Every config under configs/ must load and validate; the named ones must
// keep the shapes other work depends on. The README's key table must match
// the key table in the code.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config_load.h"

using namespace rfa;

namespace {
std::string shipped(const std::string& name) { return std::string(RFA_SOURCE_DIR) + "/configs/" + name; }
}  // namespace

TEST_CASE("shipped configs: every configs/*.yaml loads, validates and round-trips through its dump") {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(RFA_SOURCE_DIR) + "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    INFO("config: " << entry.path().string());
    Config c;
    CHECK_NOTHROW(c = config_load(entry.path().string(), {}));
    CHECK(config_parse(config_dump(c), "dump") == c);
    ++count;
  }
  CHECK(count >= 4);
}

TEST_CASE("shipped configs: the shakespeare pair is nanoGPT's CPU shape and differs only in attention") {
  Config gate = config_load(shipped("shakespeare-char-rfa-gate.yaml"), {});
  Config soft = config_load(shipped("shakespeare-char-softmax.yaml"), {});
  for (const Config* c : {&gate, &soft}) {
    CHECK(c->model.n_layers == 4);
    CHECK(c->model.n_heads == 4);
    CHECK(c->model.d_model == 128);
    CHECK(c->model.context_length == 64);
    CHECK(c->train.batch_size == 12);
    CHECK(c->train.steps == 2000);
    CHECK(c->optim.lr == 1e-3);
    CHECK(c->optim.warmup_steps == 100);
    CHECK(c->optim.lr_min == 1e-4);
    CHECK(c->train.eval_every == 250);
    CHECK(c->train.eval_batches == 0);  // the whole validation split
    CHECK(c->tokenizer.kind == TokenizerKind::character);
    CHECK(c->data.corpus == "data/tinyshakespeare.txt");
    // issue 21's measured defaults (docs/quality.md): the short convolution and the output gate
    CHECK(c->attention.short_conv == 4);
    CHECK(c->attention.output_gate);
  }
  CHECK(gate.attention.kind == AttentionKind::rfa_gate);
  CHECK(soft.attention.kind == AttentionKind::softmax);
  Config same = soft;
  same.attention.kind = gate.attention.kind;
  same.train.run_dir = gate.train.run_dir;
  CHECK(same == gate);
}

TEST_CASE("shipped configs: kjv-quick and bench-6x384 shapes") {
  Config quick = config_load(shipped("kjv-quick.yaml"), {});
  CHECK(quick.data.corpus == "data/kjv.txt");
  CHECK(quick.tokenizer.kind == TokenizerKind::bpe);
  CHECK(quick.tokenizer.vocab_size >= 1024);
  CHECK(quick.tokenizer.vocab_size <= 4096);
  CHECK(quick.attention.kind == AttentionKind::rfa_gate);

  Config bench = config_load(shipped("bench-6x384.yaml"), {});
  CHECK(bench.model.n_layers == 6);
  CHECK(bench.model.n_heads == 6);
  CHECK(bench.model.d_model == 384);
  CHECK(bench.model.context_length == 256);
  CHECK(bench.train.batch_size == 16);
  CHECK(bench.attention.kind == AttentionKind::rfa_gate);
}

TEST_CASE("shipped configs: kjv-long is the measured long-context shape (docs/long-context.md)") {
  Config c = config_load(shipped("kjv-long.yaml"), {});
  CHECK(c.data.corpus == "data/kjv.txt");
  CHECK(c.tokenizer.vocab_size == 2048);
  CHECK(c.model.n_layers == 4);
  CHECK(c.model.d_model == 256);
  CHECK(c.model.context_length == 512);
  CHECK(c.attention.kind == AttentionKind::rfa_gate);
  CHECK(c.train.stateful);
  CHECK(c.train.stateful_redraw == 0);
}

TEST_CASE("README: the Configuration section holds the current key table") {
  std::ifstream in(std::string(RFA_SOURCE_DIR) + "/README.md");
  std::stringstream readme;
  readme << in.rdbuf();
  std::string table = config_keys_markdown();
  // On failure, paste the table printed below into README.md.
  CHECK_MESSAGE(readme.str().find(table) != std::string::npos, "README key table is stale; current table:\n" << table);
}
