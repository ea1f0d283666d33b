#include <doctest/doctest.h>

#include "config/config_keys.h"
#include "config/config_load.h"
#include "support/test_files.h"

using namespace rfa;

TEST_CASE("config dump: lists every key, once, in table order") {
  std::string dump = config_dump(Config{});
  size_t at = 0;
  for (const ConfigKey& key : config_keys()) {
    std::string path = key.path;
    std::string section = path.substr(0, path.find('.')), leaf = path.substr(path.find('.') + 1);
    size_t section_at = dump.find("\n" + section + ":\n");
    REQUIRE_MESSAGE(section_at != std::string::npos, section);
    size_t key_at = dump.find("\n  " + leaf + ": ", section_at);
    REQUIRE_MESSAGE(key_at != std::string::npos, path);
    CHECK_MESSAGE(key_at >= at, path << " is out of order");
    at = key_at;
  }
}

TEST_CASE("config dump: parsing a dump gives back the same config") {
  SUBCASE("defaults") { CHECK(config_parse(config_dump(Config{}), "dump") == Config{}); }
  SUBCASE("every key changed from its default") {
    Config c = config_load("", {"model.vocab_size=4099", "model.n_layers=7", "model.d_model=96",
                                "model.n_heads=3", "model.ffn_hidden=200", "model.context_length=33",
                                "model.tie_embeddings=false", "model.norm_eps=1.5e-7", "model.init_std=0.0123456789",
                                "attention.kind=rfa", "attention.feature_map=arccos",
                                "attention.num_features=17", "attention.positions=none",
                                "attention.rope_theta=500000", "attention.chunk_size=16",
                                "attention.denominator_floor=0.1", "attention.qk_norm_eps=1e-9",
                                "attention.orthogonal_features=true", "attention.gate_bias_init=-0.3",
                                "attention.sigma_init=0.7", "attention.gate=feature", "attention.time_discount=log",
                                "attention.time_discount_c=3.5",
                                "attention.time_discount_horizon=64", "attention.short_conv=3",
                                "attention.output_gate=true", "attention.window=12",
                                "attention.layers=6*rfa, rfa_gate gate=scalar num_features=5", "tokenizer.path=m \"q\" \\ x.model",
                                "tokenizer.kind=unigram", "tokenizer.vocab_size=4096",
                                "tokenizer.corpus=c.txt", "tokenizer.max_sentences=123",
                                "tokenizer.character_coverage=0.9995", "data.corpus=d: #.txt",
                                "data.tokens=t.bin", "data.val_fraction=0.2", "data.format=alpaca",
                                "data.document_boundaries=reset", "data.packing=pack", "data.template=alpaca_short",
                                "data.train_on_prompt=true", "train.run_dir=r",
                                "train.batch_size=5", "train.grad_accum=2", "train.steps=9",
                                "train.seed=18446744073709551615", "train.log_every=3", "train.eval_every=4",
                                "train.eval_batches=6",
                                "train.precision=bf16", "train.thread_split=batch", "train.dpo_beta=0.25", "train.init_from=runs/p", "optim.lr=0.1", "optim.lr_min=0.01",
                                "optim.warmup_steps=8", "optim.beta1=0.8", "optim.beta2=0.99",
                                "optim.eps=1e-10", "optim.weight_decay=0.0", "optim.grad_clip=0.5", "optim.sigma_lr_scale=10",
                                "optim.sigma_floor=3", "optim.sigma_floor_steps=500",
                                "checkpoint.every=11", "checkpoint.keep_last=2", "checkpoint.keep_best=false"});
    // Each key above differs from its default, so a key the dump dropped would show. Not these,
    // which no valid config can change together with the rest: train.stateful and
    // stateful_redraw (instruction examples carry no state; the next subcase changes them).
    for (const ConfigKey& key : config_keys()) {
      const std::string path = key.path;
      if (path == "train.stateful" || path == "train.stateful_redraw") continue;
      CHECK_MESSAGE(config_key_get(key, c) != config_key_get(key, Config{}), key.path << " not changed by the test");
    }
    std::string dump = config_dump(c);
    Config back = config_parse(dump, "dump");
    CHECK(back == c);
    CHECK(config_dump(back) == dump);
  }
  SUBCASE("the keys the first subcase cannot change") {
    Config c = config_load("", {"train.stateful=true", "train.stateful_redraw=5", "data.format=prompt_completion",
                                "data.format=jsonl", "data.packing=pack"});
    CHECK(c.train.stateful_redraw == 5);
    CHECK(c.data.packing == Packing::pack);
    CHECK(config_parse(config_dump(c), "dump") == c);
  }
}

TEST_CASE("config dump: doubles print exactly and stay visibly numbers") {
  Config c;
  c.attention.gate_bias_init = 2.0;
  c.optim.lr = 0.1 + 0.2;  // 0.30000000000000004 must survive
  std::string dump = config_dump(c);
  CHECK(dump.find("gate_bias_init: 2.0 ") != std::string::npos);
  CHECK(config_parse(dump, "dump").optim.lr == c.optim.lr);
}

TEST_CASE("config keys markdown: one row per key with its default") {
  std::string table = config_keys_markdown();
  for (const ConfigKey& key : config_keys()) CHECK(table.find(std::string("| `") + key.path + "` |") != std::string::npos);
  CHECK(table.find("| `model.n_layers` | `4` | in [1, 1024] |") != std::string::npos);
  CHECK(table.find("softmax\\|rfa\\|rfa_gate") != std::string::npos);  // pipes escaped inside the table
}
