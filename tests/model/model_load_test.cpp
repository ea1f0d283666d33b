// Loading a model for inference from a run, a checkpoints root or a checkpoint
// directory: weights, fixed random matrices, config and tokenizer come back
// exactly; a missing run or a tokenizer other than the training one is an error.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "io/file_io.h"
#include "io/hash.h"
#include "config/config_load.h"
#include "core/error.h"
#include "model/model_io.h"
#include "model/model_load.h"
#include "model/model_spec.h"
#include "support/corpus.h"
#include "support/temp_dir.h"
#include "support/test_files.h"
#include "support/tiny_model.h"
#include "support/trained_tokenizer.h"

using namespace rfa;

namespace {

std::string train_tokenizer(const test::TempDir& dir, const std::string& name, uint64_t corpus_seed) {
  return test::tokenizer_train_into(dir, dir.write(name + ".txt", test::corpus_make(150, corpus_seed)), name + ".model",
                                    TokenizerKind::character, 320);
}

struct Saved {
  Config config;
  std::vector<float> params, random;
};

// Saves a checkpoint of a fresh rfa_gate model under root; with_copy: include the tokenizer file.
Saved save(const std::string& root, const std::string& tokenizer, bool with_copy, const std::string& config_tok) {
  Saved s;
  s.config = test::tiny_config(AttentionKind::rfa_gate, {.vocab = 0, .context = 16});  // V left to the tokenizer
  s.config.tokenizer.path = config_tok;
  ModelConfig mc = s.config.model;
  mc.vocab_size = Tokenizer::load(tokenizer).vocab_size();
  Model<float> model(model_spec_make(mc, s.config.attention));
  model_init(model, 3);
  std::vector<float> m(static_cast<size_t>(model.param_size())), v(m.size());
  CheckpointContents c;
  c.model = model_tensor_refs(model);
  c.optimizer = optimizer_tensor_refs(model, m.data(), v.data());
  c.state.step = 7;
  c.state.tokenizer_xxh64 = tokenizer_xxh64(tokenizer);
  c.config_yaml = config_dump(s.config);
  if (with_copy) c.tokenizer_path = tokenizer;
  checkpoint_save(root, c, CheckpointConfig{});
  s.params.assign(model.params(), model.params() + model.param_size());
  s.random.assign(model.random_fixed(), model.random_fixed() + model.random_size);
  return s;
}

}  // namespace

TEST_CASE("model_load: run dir, checkpoints root and checkpoint dir give the saved model") {
  test::TempDir dir;
  const std::string tok = train_tokenizer(dir, "tok", 1);
  const Saved saved = save(dir.file("run/checkpoints"), tok, true, "elsewhere/never-read.model");
  for (const std::string& path :
       {dir.file("run"), dir.file("run/checkpoints"), dir.file("run/checkpoints/step-000007")}) {
    INFO("path ", path);
    LoadedModel m = model_load(path);
    CHECK(m.step == 7);
    CHECK(m.checkpoint_dir.find("step-000007") != std::string::npos);
    CHECK(m.config.model.vocab_size == m.tokenizer->vocab_size());
    CHECK(m.model->spec.attn[0].rfa.gated);
    REQUIRE(m.model->param_size() == static_cast<int64_t>(saved.params.size()));
    CHECK(std::memcmp(m.model->params(), saved.params.data(), saved.params.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(m.model->random_fixed(), saved.random.data(), saved.random.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("model_load: the tokenizer is never guessed") {
  test::TempDir dir;
  const std::string tok = train_tokenizer(dir, "tok", 1);
  const std::string other = train_tokenizer(dir, "other", 2);
  // No copy in the checkpoint: the config's path is accepted only if it is the training tokenizer.
  save(dir.file("good/checkpoints"), tok, false, tok);
  CHECK(model_load(dir.file("good")).tokenizer->vocab_size() > 0);
  save(dir.file("bad/checkpoints"), tok, false, other);
  CHECK_THROWS_WITH_AS(model_load(dir.file("bad")), doctest::Contains("different tokenizer"), Error);
  CHECK_THROWS_WITH_AS(model_load(dir.file("nowhere")), doctest::Contains("does not exist"), Error);
  CHECK_THROWS_WITH_AS(model_load(dir.path()), doctest::Contains("has the run saved a checkpoint"), Error);
}

TEST_CASE("model_load: a corrupt tokenizer copy is named, with an intact copy to restore it from") {
  test::TempDir dir;
  const std::string tok = train_tokenizer(dir, "tok", 1);
  save(dir.file("run/checkpoints"), tok, true, tok);
  const std::string copy = dir.file("run/checkpoints/step-000007/tokenizer.model");
  std::string bytes = file_read_text(copy);
  file_write_durable(copy, bytes.substr(0, bytes.size() / 2));  // no longer parses as a SentencePiece model
  const std::string what = test::error_of([&] { model_load(dir.file("run")); });  // a corrupt copy is refused
  CHECK(what.find("tokenizer copy " + copy + " is corrupt") != std::string::npos);
  CHECK(what.find("`cp " + tok + " " + copy + "`") != std::string::npos);  // the config's path matches
  CHECK(what.find("rfa tokenizer train") == std::string::npos);  // re-training never fits the model
  std::filesystem::copy_file(tok, copy, std::filesystem::copy_options::overwrite_existing);  // the advice
  CHECK(model_load(dir.file("run")).tokenizer->fnv1a64() == Tokenizer::load(tok).fnv1a64());
}
