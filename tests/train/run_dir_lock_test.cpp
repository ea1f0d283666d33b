// RunDirLock: one holder per run directory (flock conflicts between two open file
// descriptions even in one process), and a failed start removes exactly what it created.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.h"
#include "support/temp_dir.h"
#include "train/run_dir_lock.h"

using namespace rfa;
namespace fs = std::filesystem;

namespace {

void touch(const std::string& path) { std::ofstream(path) << "x"; }

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("run dir lock: a second holder is refused naming the first one's pid; released on destruction") {
  test::TempDir tmp;
  const std::string run = tmp / "run";
  std::optional<RunDirLock> first(std::in_place, run);
  CHECK(read(run + "/.lock") == std::to_string(::getpid()) + "\n");
  CHECK_THROWS_WITH_AS(RunDirLock second(run),
                       doctest::Contains(("is in use by another trainer (pid " + std::to_string(::getpid()) +
                                          ", which holds " + run + "/.lock)")
                                             .c_str()),
                       Error);
  CHECK(fs::exists(run + "/.lock"));  // the refused one removed nothing
  first->keep();
  first.reset();
  RunDirLock again(run);  // released: the left-over .lock file does not block
  again.keep();
}

TEST_CASE("run dir lock: without keep(), what the run created goes: files, the directory, empty parents") {
  test::TempDir tmp;
  const std::string run = tmp / "a/b/run";
  {
    RunDirLock lock(run);
    CHECK(lock.created());
    touch(run + "/train.log");
    fs::create_directories(run + "/checkpoints/step-000001.tmp-1");
  }
  CHECK_FALSE(fs::exists(tmp / "a"));

  // A parent that gains someone else's file meanwhile stays, with that file.
  {
    RunDirLock lock(run);
    touch(tmp / "a/other.txt");
  }
  CHECK_FALSE(fs::exists(run));
  CHECK(fs::exists(tmp / "a/other.txt"));
}

TEST_CASE("run dir lock: an existing directory is never removed, nor the files that were there before") {
  test::TempDir tmp;
  const std::string run = tmp / "run";
  fs::create_directories(run + "/checkpoints");
  touch(run + "/train.log");
  touch(run + "/notes.txt");
  {
    RunDirLock lock(run);
    CHECK_FALSE(lock.created());
    touch(run + "/metrics.jsonl");
    touch(run + "/config.yaml");
  }
  CHECK(fs::exists(run + "/checkpoints"));
  CHECK(fs::exists(run + "/train.log"));
  CHECK(fs::exists(run + "/notes.txt"));
  CHECK_FALSE(fs::exists(run + "/metrics.jsonl"));  // added by the failed run
  CHECK_FALSE(fs::exists(run + "/config.yaml"));
  CHECK_FALSE(fs::exists(run + "/.lock"));
}

TEST_CASE("run dir lock: keep() keeps everything once a checkpoint exists") {
  test::TempDir tmp;
  const std::string run = tmp / "run";
  {
    RunDirLock lock(run);
    touch(run + "/train.log");
    lock.keep();
  }
  CHECK(fs::exists(run + "/train.log"));
  CHECK(fs::exists(run + "/.lock"));
}

TEST_CASE("run dir lock: a path that is a file is refused by name") {
  test::TempDir tmp;
  touch(tmp / "file");
  CHECK_THROWS_WITH_AS(RunDirLock(tmp / "file"), doctest::Contains("exists and is not a directory"), Error);
  CHECK(fs::exists(tmp / "file"));
}

TEST_CASE("run dir lock: RUN/checkpoints that is not a directory is refused before any step") {
  // It passed the probe and failed the first save ("cannot create checkpoint directory ...:
  // Not a directory"), checkpoint.every steps of training later.
  test::TempDir tmp;
  const std::string run = tmp / "run";
  fs::create_directory(run);
  touch(run + "/checkpoints");
  CHECK_THROWS_WITH_AS(RunDirLock{run},
                       doctest::Contains(("holds a 'checkpoints' that is not a directory, so no checkpoint could be "
                                          "saved; move " + run + "/checkpoints away")
                                             .c_str()),
                       Error);
  CHECK(read(run + "/checkpoints") == "x");  // left as it was
  CHECK_FALSE(fs::exists(run + "/.lock"));   // and the refused start removed what it made
}
