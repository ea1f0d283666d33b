// Fine-tuning (train.init_from, train/train_init.h) in one process: the child starts from
// exactly the parent's function (its validation loss before a step is the parent's), takes
// the parent's architecture and refuses a different one by name, and resumes bit-identically.
// The command-line version (refusals before any write, state.json, across processes) is
// tests/e2e/init_from.sh.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "config/config_enums.h"
#include "support/resume_round_trip.h"
#include "support/temp_dir.h"
#include "support/test_files.h"
#include "support/train_fixtures.h"
#include "train/train_init.h"
#include "train/train_session.h"

using namespace rfa;

namespace {

Config parent_config(AttentionKind kind, const std::string& run_dir) {
  Config c = test::train_config_saved(kind);
  c.train.batch_size = 3;
  c.train.seed = 5;
  c.train.run_dir = run_dir;
  c.optim.lr = 1e-2;
  c.optim.warmup_steps = 2;
  return c;
}

// A child config as a user writes one: only data, train and optim keys, the rest at their defaults.
Config child_config(const std::string& parent, const std::string& run_dir) {
  Config c;
  c.train.init_from = parent;
  c.train.run_dir = run_dir;
  c.train.batch_size = 2;
  c.train.grad_accum = 2;
  c.train.steps = 6;
  c.train.seed = 99;
  c.optim.lr = 3e-3;
  c.optim.warmup_steps = 1;
  return c;
}

// A parent run: `steps` steps on random tokens, saved as train_run saves a checkpoint.
struct Parent {
  Config config;
  std::vector<uint16_t> tokens;
  TokenSplit split;
  std::string checkpoint;
  Parent(AttentionKind kind, const std::string& run_dir, uint64_t token_seed, int64_t steps)
      : config(parent_config(kind, run_dir)),
        tokens(test::random_tokens(3000, token_seed)),
        split(test::split_of(tokens)) {
    BatchSampler sampler(split, config.train.batch_size, config.model.context_length, config.train.seed);
    TrainSession parent(config, model_spec_make(config.model, config.attention));
    for (int64_t s = 0; s < steps; ++s) parent.step(s, sampler);
    const std::string tokenizer = run_dir + "/tok.model";
    std::filesystem::create_directories(run_dir);
    file_write_durable(tokenizer, "stand-in tokenizer bytes");
    checkpoint = test::session_save(parent, run_dir, steps, tokenizer);
  }
};

// The origins of a config that gave `keys` (config_load_with_origins), each from "child.yaml".
ConfigOrigins given(std::initializer_list<const char*> keys) {
  ConfigOrigins origins;
  for (const char* key : keys) origins[key] = "child.yaml";
  return origins;
}

bool all_zero(const float* p, int64_t n) {
  return std::all_of(p, p + n, [](float x) { return x == 0.0f; });
}

}  // namespace

TEST_CASE("init-from: the child's validation loss before its first step is the parent's, for every kind") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa, AttentionKind::rfa_gate}) {
    CAPTURE(enum_name(kind));
    test::TempDir dir;
    const Parent p(kind, dir / "parent", 8, 4);
    const Config& pc = p.config;
    const std::string& checkpoint = p.checkpoint;
    const std::vector<int32_t> all = p.split.to_vector();
    const std::vector<int32_t> val(all.begin(), all.begin() + 500);
    TrainSession parent(pc, model_spec_make(pc.model, pc.attention));
    resume_load(parent, checkpoint);
    const double parent_val = parent.evaluate(val);

    const InitPoint point = init_from_prepare(child_config(dir / "parent", dir / "child"), {});
    CHECK(point.checkpoint_dir == checkpoint);
    CHECK(point.step == 4);
    CHECK(point.model_xxh64.size() == 16);
    CHECK(point.config.model == pc.model);  // the architecture is the parent's
    CHECK(point.config.attention == pc.attention);
    CHECK(point.config.train.seed == 99);   // the training is the child's
    CHECK(point.config.optim.lr == 3e-3);
    const Config& cc = point.config;
    TrainSession child(cc, model_spec_make(cc.model, cc.attention));
    CHECK(child.evaluate(val) != parent_val);  // a fresh init (the child's seed) scores otherwise
    init_from_load(child, point);
    CHECK(child.evaluate(val) == parent_val);  // exactly: the same weights and fixed random matrices
    CHECK(child.steps_taken() == 0);
    CHECK(all_zero(child.adam_m(), child.model().param_size()));
    CHECK(all_zero(child.adam_v(), child.model().param_size()));
  }
}

TEST_CASE("init-from: a key that changes the architecture is refused by name with both values") {
  test::TempDir dir;
  const Parent p(AttentionKind::rfa_gate, dir / "parent", 3, 2);
  const Config base = child_config(dir / "parent", dir / "child");

  Config layers = base;
  layers.model.n_layers = 3;  // the parent has 2
  std::string e = test::error_of([&] { init_from_prepare(layers, given({"model.n_layers"})); });
  CHECK(e.find("child.yaml: --init-from") != std::string::npos);
  CHECK(e.find("model.n_layers is '3' in the new config but '2' in the parent checkpoint") != std::string::npos);
  CHECK(e.find("model.context_length and attention.chunk_size") != std::string::npos);

  Config kind = base;
  kind.attention.kind = AttentionKind::softmax;
  e = test::error_of([&] { init_from_prepare(kind, given({"attention.kind"})); });
  CHECK(e.find("attention.kind is 'softmax' in the new config but 'rfa_gate'") != std::string::npos);

  Config vocab = base;
  vocab.tokenizer.vocab_size = 512;
  e = test::error_of([&] { init_from_prepare(vocab, given({"tokenizer.vocab_size"})); });
  CHECK(e.find("tokenizer.vocab_size is '512' in the new config but '300'") != std::string::npos);

  Config longer = base;  // what may change: the training context and the chunking
  longer.model.context_length = 48;
  longer.attention.chunk_size = 16;
  const InitPoint point = init_from_prepare(longer, given({"model.context_length", "attention.chunk_size"}));
  CHECK(point.config.model.context_length == 48);
  CHECK(point.config.attention.chunk_size == 16);
  CHECK(point.config.model.n_layers == 2);

  Config own = base;
  own.train.run_dir = dir / "parent";
  e = test::error_of([&] { init_from_prepare(own, {}); });
  CHECK(e.find("is the parent's own run; a fine-tune is a new run") != std::string::npos);
}

TEST_CASE("init-from: a key given with its default value is told from one left out") {
  // config_load's origins say which keys the config gave: 'n_layers: 4' (the default) against a
  // parent of 2 layers was once taken for a key left out, and silently became 2.
  test::TempDir dir;
  const Parent p(AttentionKind::rfa_gate, dir / "parent", 3, 2);
  const Config base = child_config(dir / "parent", dir / "child");
  REQUIRE(base.model.n_layers == Config{}.model.n_layers);  // 4, the default; the parent has 2
  CHECK(init_from_prepare(base, {}).config.model.n_layers == 2);  // left out: the parent's
  const std::string e = test::error_of([&] { init_from_prepare(base, given({"model.n_layers"})); });
  CHECK(e.find("model.n_layers is '4' in the new config but '2' in the parent checkpoint") != std::string::npos);

  Config same = base;  // given equal to the parent's: accepted
  same.model.n_layers = 2;
  CHECK(init_from_prepare(same, given({"model.n_layers"})).config.model.n_layers == 2);

  // A changeable key given with its default is the child's, not the parent's.
  REQUIRE(p.config.model.context_length != Config{}.model.context_length);
  CHECK(init_from_prepare(base, {}).config.model.context_length == p.config.model.context_length);
  CHECK(init_from_prepare(base, given({"model.context_length"})).config.model.context_length ==
        Config{}.model.context_length);

  // "Derive it" values follow the parent given or not: vocab_size 0 (the tokenizer's, the
  // parent's) and tokenizer.path/corpus "" (the parent's tokenizer, not one of the child's corpus).
  const InitPoint point = init_from_prepare(base, given({"model.vocab_size", "tokenizer.path", "tokenizer.corpus"}));
  CHECK(point.config.model.vocab_size == p.config.model.vocab_size);
  CHECK(point.config.tokenizer.path == config_tokenizer_path(p.config));
}

TEST_CASE("init-from: the child's config names the parent's tokenizer and its corpus, resolved from \"\"") {
  test::TempDir dir;
  const Parent p(AttentionKind::rfa_gate, dir / "parent", 3, 2);
  REQUIRE(p.config.tokenizer.path.empty());  // the parent's tokenizer was next to its corpus, data/kjv.txt
  REQUIRE(p.config.tokenizer.corpus.empty());
  Config child = child_config(dir / "parent", dir / "child");
  child.data.corpus = "child/text.txt";
  const InitPoint point = init_from_prepare(child, {});
  // Left "", they would name a tokenizer of child/text.txt (child/text-char300.model).
  CHECK(point.config.tokenizer.path == "data/kjv-char300.model");
  CHECK(point.config.tokenizer.corpus == "data/kjv.txt");
  CHECK(point.config.data.corpus == "child/text.txt");
  CHECK(point.tokenizer_path == p.checkpoint + "/tokenizer.model");  // what the run uses: the checkpoint's copy
}

TEST_CASE("init-from: a fine-tune stopped, saved and resumed equals one that never stopped, bit for bit") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate}) {
    CAPTURE(enum_name(kind));
    test::TempDir dir;
    const Parent p(kind, dir / "parent", 11, 3);
    const TokenSplit& split = p.split;

    const InitPoint point = init_from_prepare(child_config(dir / "parent", dir / "child"), {});
    const Config& cc = point.config;
    const ModelSpec spec = model_spec_make(cc.model, cc.attention);
    BatchSampler sampler(split, cc.train.batch_size, cc.model.context_length, cc.train.seed);
    const std::vector<int32_t> all = split.to_vector();
    const std::vector<int32_t> val(all.begin(), all.begin() + 300);
    TrainSession straight(cc, spec), resumed(cc, spec);
    init_from_load(straight, point);
    std::filesystem::create_directories(cc.train.run_dir);
    for (int64_t i = 0; i < resumed.model().param_size(); ++i) resumed.model().params()[i] = 0.0f;
    const test::RoundTrip r = test::resume_round_trip(
        straight, resumed, sampler, dir / "child",
        {.steps = 6, .save_after = 2, .val = &val, .init = [&](TrainSession& s) { init_from_load(s, point); }});
    CHECK(r.got == r.want);
    const int64_t P = straight.model().param_size();
    CHECK(std::equal(straight.model().params(), straight.model().params() + P, resumed.model().params()));
    CHECK(std::equal(straight.adam_m(), straight.adam_m() + P, resumed.adam_m()));
    CHECK(std::equal(straight.adam_v(), straight.adam_v() + P, resumed.adam_v()));
  }
}
