// Exact resume in one process: k steps, a checkpoint written by the checkpoint
// library, a fresh session loading it and N-k more steps give the same losses,
// weights and AdamW moments, bit for bit, as N steps straight. Also the config
// rules of --resume and the metrics trimming. The fresh-process version is
// tests/e2e/resume.sh. A bf16 run's resume: train_resume_bf16_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "config/config_enums.h"
#include "core/error.h"
#include "io/file_io.h"
#include "support/resume_round_trip.h"
#include "support/temp_dir.h"
#include "support/test_files.h"
#include "support/train_fixtures.h"
#include "train/train_resume.h"
#include "train/train_session.h"

using namespace rfa;

namespace {

using test::random_tokens;
using test::split_of;

Config tiny_config(AttentionKind kind) { return test::resume_config(kind); }

bool same(const float* a, const float* b, int64_t n) { return std::equal(a, a + n, b); }

}  // namespace

TEST_CASE("resume: k steps, save, load into a fresh session, N-k steps equals N steps straight") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa, AttentionKind::rfa_gate}) {
    CAPTURE(enum_name(kind));
    const Config c = tiny_config(kind);
    const ModelSpec spec = model_spec_make(c.model, c.attention);
    std::vector<uint16_t> tokens = random_tokens(3000, 4);
    TokenSplit split = split_of(tokens);
    BatchSampler sampler(split, c.train.batch_size, c.model.context_length, c.train.seed);
    const std::vector<int32_t> val = split.to_vector();
    const int64_t k = 3;

    test::TempDir dir;
    TrainSession straight(c, spec), resumed(c, spec);  // resumed zeroed: the weights must come from the file
    for (int64_t i = 0; i < resumed.model().param_size(); ++i) resumed.model().params()[i] = 0.0f;
    const test::RoundTrip r =
        test::resume_round_trip(straight, resumed, sampler, dir.path(), {.steps = 7, .save_after = k, .val = &val});
    CHECK(r.loaded.step == k);
    CHECK(resumed.steps_taken() == 7);  // resume_load set k; the resumed steps added theirs

    CHECK(r.got == r.want);  // exact, loss by loss
    const int64_t P = straight.model().param_size();
    CHECK(same(straight.model().params(), resumed.model().params(), P));
    CHECK(same(straight.adam_m(), resumed.adam_m(), P));
    CHECK(same(straight.adam_v(), resumed.adam_v(), P));
    CHECK(same(straight.model().random_fixed(), resumed.model().random_fixed(), straight.model().random_size));
  }
}

TEST_CASE("resume: a checkpoint of another shape or seed is refused with the tensor and both shapes") {
  const Config c = tiny_config(AttentionKind::rfa_gate);
  test::TempDir dir;
  const std::string tokenizer = dir.write("tok.model", "stand-in");
  TrainSession session(c, model_spec_make(c.model, c.attention));
  const std::string checkpoint = test::session_save(session, dir.path(), 1, tokenizer);

  Config wide = c;
  wide.model.d_model = 48;
  TrainSession other(wide, model_spec_make(wide.model, wide.attention));
  const std::string m = test::error_of([&] { resume_load(other, checkpoint); });  // width 32 into width 48
  CHECK(m.find("tok_embedding") != std::string::npos);
  CHECK(m.find("[300, 32]") != std::string::npos);
  CHECK(m.find("[300, 48]") != std::string::npos);
  Config reseeded = c;
  reseeded.train.seed = 99;
  TrainSession third(reseeded, model_spec_make(reseeded.model, reseeded.attention));
  CHECK_THROWS_WITH_AS(resume_load(third, checkpoint), doctest::Contains("seed 21"), Error);
}

TEST_CASE("resume: the saved config is used; --set may change only cadence, length and paths") {
  const Config c = tiny_config(AttentionKind::rfa_gate);
  test::TempDir dir;
  const std::string tokenizer = dir.write("tok.model", "stand-in");
  TrainSession session(c, model_spec_make(c.model, c.attention));
  const std::string run = dir / "run";
  const std::string checkpoint = test::session_save(session, run, 2, tokenizer);

  SUBCASE("from the run directory: latest, with the run directory as train.run_dir") {
    ResumePoint p = resume_prepare(run, {"train.steps=50", "train.log_every=5", "checkpoint.every=7"});
    CHECK(p.checkpoint_dir == checkpoint);
    CHECK(p.config.train.run_dir == run);
    CHECK(p.config.train.steps == 50);
    CHECK(p.config.checkpoint.every == 7);
    CHECK(p.config.model == c.model);
    CHECK(p.config.optim == c.optim);
    CHECK(p.tokenizer_path == checkpoint + "/tokenizer.model");
  }
  SUBCASE("from a checkpoint directory, forked into another run directory") {
    ResumePoint p = resume_prepare(checkpoint, {"train.run_dir=" + dir / "fork"});
    CHECK(p.checkpoint_dir == checkpoint);
    CHECK(p.config.train.run_dir == dir / "fork");
  }
  SUBCASE("a shape, optimizer or data change is refused with both values") {
    CHECK_THROWS_WITH_AS(resume_prepare(run, {"model.d_model=64"}),
                         doctest::Contains("model.d_model is '32' in checkpoint"), Error);
    CHECK_THROWS_WITH_AS(resume_prepare(run, {"model.d_model=64"}), doctest::Contains("makes it '64'"), Error);
    CHECK_THROWS_WITH_AS(resume_prepare(run, {"optim.lr=0.5"}), doctest::Contains("optim.lr"), Error);
    CHECK_THROWS_WITH_AS(resume_prepare(run, {"train.seed=3"}), doctest::Contains("train.seed"), Error);
    CHECK_THROWS_WITH_AS(resume_prepare(run, {"data.val_fraction=0.2"}), doctest::Contains("data.val_fraction"),
                         Error);
  }
  SUBCASE("setting a key to its saved value is no change") {
    CHECK_NOTHROW(resume_prepare(run, {"model.d_model=32"}));
  }
  SUBCASE("a corrupt tokenizer copy is named, with the intact tokenizer.path to restore it from") {
    file_write_durable(checkpoint + "/tokenizer.model", "stand-iN");
    const std::string fix = "`cp " + tokenizer + " " + checkpoint + "/tokenizer.model`";
    CHECK_THROWS_WITH_AS(resume_prepare(run, {"tokenizer.path=" + tokenizer}), doctest::Contains(fix.c_str()), Error);
    CHECK_THROWS_WITH_AS(resume_prepare(run, {}), doctest::Contains("no intact copy was found"), Error);
  }
  SUBCASE("a run without checkpoints says so") {
    CHECK_THROWS_WITH_AS(resume_prepare(dir / "nothing", {}), doctest::Contains("does not exist"), Error);
  }
}

TEST_CASE("resume: metrics lines past the checkpoint's step are dropped, torn lines too") {
  test::TempDir dir;
  const std::string path = dir.write("metrics.jsonl",
                                     "{\"type\":\"train\",\"step\":1,\"loss\":3}\n"
                                     "{\"type\":\"eval\",\"step\":2,\"val_loss\":2.5}\n"
                                     "{\"type\":\"train\",\"step\":2,\"loss\":2}\n"
                                     "{\"type\":\"train\",\"step\":3,\"loss\":1}\n"
                                     "{\"type\":\"train\",\"st");
  metrics_keep_through(path, 2);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text ==
        "{\"type\":\"train\",\"step\":1,\"loss\":3}\n"
        "{\"type\":\"eval\",\"step\":2,\"val_loss\":2.5}\n"
        "{\"type\":\"train\",\"step\":2,\"loss\":2}\n");
  metrics_keep_through(dir / "absent.jsonl", 2);  // no file: nothing to do
  CHECK_FALSE(std::filesystem::exists(dir / "absent.jsonl"));
}
