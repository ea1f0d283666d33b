// state.json's step is checked three ways when a checkpoint loads: its own checksum,
// the directory name (step-NNNNNN) and the step both safetensors files were written at.
// A checkpoint written before those checks existed (format version 1) still loads.
#include <doctest/doctest.h>

#include <filesystem>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_test_support.h"
#include "io/file_io.h"
#include "core/error.h"
#include "support/temp_dir.h"

using namespace rfa;
namespace fs = std::filesystem;

namespace {

doctest::Contains contains(const std::string& text) { return doctest::Contains(text.c_str()); }

CheckpointConfig keep_all() {
  CheckpointConfig c;
  c.keep_last = 100;
  c.keep_best = false;
  return c;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// A checkpoint directory as format version 1 wrote it: no "rfa.step" metadata in the
// safetensors files, no checksum in state.json.
std::string write_version1(const std::string& root, const test::ToyModel& toy, int64_t step) {
  const std::string dir = fmt::format("{}/step-{:06d}", root, step);
  fs::create_directories(dir);
  safetensors_write(dir + "/model.safetensors", toy.model_refs(), {{"rfa.content", "model"}});
  safetensors_write(dir + "/optimizer.safetensors", toy.optimizer_refs(), {{"rfa.content", "optimizer"}});
  file_write_durable(dir + "/config.yaml", "model:\n  d_model: 8\n");
  file_write_durable(dir + "/state.json", fmt::format(R"({{
  "format_version": 1,
  "step": {},
  "seed": 1337,
  "data_position": {},
  "tokens_seen": 6144,
  "wall_seconds": 3.25,
  "val_loss": 2.5,
  "best_val_loss": 2.5,
  "tokenizer_checksum": "",
  "threads": 2
}}
)",
                                                     step, step));
  return dir;
}

}  // namespace

TEST_CASE("checkpoint: an edited state.json step (12 -> 13, 12 -> 2) is refused naming the file and the fix") {
  test::TempDir tmp;
  test::ToyModel toy(1);
  const std::string dir = checkpoint_save(tmp / "ck", toy.contents(12, 2.5), keep_all());
  const std::string state_path = dir + "/state.json";
  const std::string state = file_read_text(state_path);
  CHECK(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs()).state.step == 12);
  for (const char* edit : {"\"step\": 13", "\"step\": 2"}) {
    CAPTURE(edit);
    file_write_durable(state_path, replaced(state, "\"step\": 12", edit));
    CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs()),
                         contains(state_path + ": checksum"), Error);
    CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), {}),
                         doctest::Contains("Restore the original state.json, or resume from another checkpoint with "
                                           "`rfa train --resume RUN/checkpoints/step-N`"),
                         Error);
  }
}

TEST_CASE("checkpoint: a state.json with a valid checksum but another step is refused by the name and the files") {
  test::TempDir tmp;
  test::ToyModel toy(2);
  const std::string dir = checkpoint_save(tmp / "ck", toy.contents(12, 2.5), keep_all());
  const std::string state_path = dir + "/state.json";

  // Rewritten by a tool that recomputes the checksum: the directory name disagrees.
  TrainState moved = toy.contents(13, 2.5).state;
  file_write_durable(state_path, train_state_serialize(moved));
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs()),
                       contains(state_path + ": step 13 does not match its checkpoint directory step-000012 (step 12); "
                                "restore the original"),
                       Error);
  CHECK_THROWS_AS(checkpoint_load(dir + "/", toy.model_specs(), {}), Error);  // trailing slash: same check

  // ... and the directory renamed to match: the tensor files still say step 12.
  const std::string renamed = tmp / "ck/step-000013";
  fs::rename(dir, renamed);
  CHECK_THROWS_WITH_AS(checkpoint_load(renamed, toy.model_specs(), toy.optimizer_specs()),
                       contains("step 13 does not match the step 12 that " + renamed + "/model.safetensors was written at"),
                       Error);

  // A checkpoint copied under another name is checked by its files alone.
  const std::string copied = tmp / "my-checkpoint";
  fs::copy(renamed, copied);
  CHECK_THROWS_WITH_AS(checkpoint_load(copied, toy.model_specs(), {}),
                       doctest::Contains("model.safetensors was written at"), Error);
  file_write_durable(copied + "/state.json", train_state_serialize(toy.contents(12, 2.5).state));
  CHECK(checkpoint_load(copied, toy.model_specs(), toy.optimizer_specs()).state.step == 12);
}

TEST_CASE("checkpoint: the optimizer file's step is checked against state.json too") {
  test::TempDir tmp;
  test::ToyModel toy(3);
  const std::string dir = checkpoint_save(tmp / "ck", toy.contents(12, 2.5), keep_all());
  // The optimizer file of another step, e.g. copied in from step 11.
  const std::string other = checkpoint_save(tmp / "other", toy.contents(11, 2.5), keep_all());
  fs::copy_file(other + "/optimizer.safetensors", dir + "/optimizer.safetensors",
                fs::copy_options::overwrite_existing);
  CHECK(checkpoint_load(dir, toy.model_specs(), {}).state.step == 12);  // inference reads no optimizer
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs()),
                       contains("step 12 does not match the step 11 that " + dir + "/optimizer.safetensors was written at"),
                       Error);
}

TEST_CASE("checkpoint: a format version 1 checkpoint loads; its step is still checked against the name") {
  test::TempDir tmp;
  test::ToyModel toy(4);
  const std::string dir = write_version1(tmp / "ck", toy, 12);
  LoadedCheckpoint loaded = checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs());
  CHECK(loaded.state.format_version == 1);
  CHECK(loaded.state.step == 12);
  CHECK(toy.matches(loaded));

  const std::string state = file_read_text(dir + "/state.json");
  file_write_durable(dir + "/state.json", replaced(state, "\"step\": 12", "\"step\": 2"));
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), toy.optimizer_specs()),
                       doctest::Contains("step 2 does not match its checkpoint directory step-000012"), Error);

  // Version 2 requires the files' step: a version 2 state.json over version 1 files is refused.
  TrainState s = toy.contents(12, 2.5).state;
  file_write_durable(dir + "/state.json", train_state_serialize(s));
  CHECK_THROWS_WITH_AS(checkpoint_load(dir, toy.model_specs(), {}),
                       doctest::Contains("model.safetensors: no \"rfa.step\" metadata"), Error);
}
