// A corrupt tokenizer copy in a checkpoint: the error names the file and points
// at an intact copy (the run's, another checkpoint's, tokenizer.path), in that order.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "checkpoint/checkpoint_tokenizer.h"
#include "io/file_io.h"
#include "io/hash.h"
#include "core/error.h"
#include "support/temp_dir.h"
#include "support/test_files.h"

using namespace rfa;

using test::error_of;

TEST_CASE("checkpoint tokenizer: a corrupt copy names the file and where to restore it from") {
  test::TempDir tmp;
  const std::string run = tmp / "run", root = run + "/checkpoints";
  const std::string bad = root + "/step-000010", older = root + "/step-000005", newer = root + "/step-000020";
  for (const std::string& d : {bad, older, newer}) std::filesystem::create_directories(d);
  file_write_durable(run + "/tokenizer.model", "the tokenizer");
  file_write_durable(older + "/tokenizer.model", "the tokenizer");
  file_write_durable(newer + "/tokenizer.model", "the tokenizer");
  file_write_durable(bad + "/tokenizer.model", "the tokenizeR");
  const std::string path = tmp.write("tok.model", "the tokenizer");
  TrainState state;
  state.tokenizer_xxh64 = tokenizer_xxh64(run + "/tokenizer.model");

  CHECK_NOTHROW(checkpoint_tokenizer_verify(newer, state, path));
  std::string e = error_of([&] { checkpoint_tokenizer_verify(bad, state, path); });
  CHECK(e.find("tokenizer copy " + bad + "/tokenizer.model is corrupt") != std::string::npos);
  CHECK(e.find(state.tokenizer_xxh64) != std::string::npos);
  CHECK(e.find("`cp " + run + "/tokenizer.model " + bad + "/tokenizer.model`") != std::string::npos);

  // Without the run's copy: the newest other checkpoint's, then tokenizer.path.
  std::filesystem::remove(run + "/tokenizer.model");
  e = error_of([&] { checkpoint_tokenizer_verify(bad, state, path); });
  CHECK(e.find("`cp " + newer + "/tokenizer.model " + bad + "/tokenizer.model`") != std::string::npos);
  CHECK(tokenizer_intact_copies(bad, state.tokenizer_xxh64, path) ==
        std::vector<std::string>{newer + "/tokenizer.model", older + "/tokenizer.model", path});
  std::filesystem::remove(newer + "/tokenizer.model");
  std::filesystem::remove(older + "/tokenizer.model");
  e = error_of([&] { checkpoint_tokenizer_verify(bad, state, path); });
  CHECK(e.find("`cp " + path + " " + bad + "/tokenizer.model`") != std::string::npos);

  // Nothing intact anywhere: say what was searched, and not to re-train.
  file_write_durable(path, "another tokenizer");
  e = error_of([&] { checkpoint_tokenizer_verify(bad, state, path); });
  CHECK(e.find("no intact copy was found") != std::string::npos);
  CHECK(e.find(path) != std::string::npos);
  CHECK(e.find("Do not re-train it") != std::string::npos);

  // Following the advice repairs it; a missing copy or an unrecorded checksum is not this check's business.
  file_write_durable(bad + "/tokenizer.model", "the tokenizer");
  CHECK_NOTHROW(checkpoint_tokenizer_verify(bad, state, path));
  CHECK_NOTHROW(checkpoint_tokenizer_verify(older, state, path));
  CHECK_NOTHROW(checkpoint_tokenizer_verify(bad, TrainState{}, path));
}
