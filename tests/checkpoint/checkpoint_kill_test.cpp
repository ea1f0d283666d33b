#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "checkpoint/checkpoint.h"
#include "checkpoint/checkpoint_dir.h"
#include "support/temp_dir.h"
#include "checkpoint/checkpoint_test_support.h"

using namespace rfa;
namespace fs = std::filesystem;

namespace {

// Bytes written so far into the child's temp checkpoint dir; -1 while it does not exist.
int64_t temp_bytes(const std::string& root, pid_t child) {
  std::error_code ec;
  fs::path temp = fs::path(root) / fmt::format("{}.tmp-{}", checkpoint_name(2), child);
  if (!fs::is_directory(temp, ec)) return -1;
  int64_t total = 0;
  for (const auto& entry : fs::directory_iterator(temp, ec)) {
    std::error_code size_ec;
    auto size = entry.file_size(size_ec);
    if (!size_ec) total += int64_t(size);
  }
  return total;
}

}  // namespace

TEST_CASE("checkpoint: a writer killed midway leaves the previous checkpoint loadable") {
  CheckpointConfig retention;
  retention.keep_last = 3;
  // Kill points: as soon as the temp dir holds a byte, and deep into the 64 MiB model file.
  for (int64_t kill_after : {int64_t(1), int64_t(40) << 20}) {
    CAPTURE(kill_after);
    test::TempDir tmp;
    std::string root = tmp / "ck";
    test::ToyModel small(1), big(2, int64_t(16) << 20);  // 16 Mi floats = 64 MiB
    checkpoint_save(root, small.contents(1, 2.0), retention);

    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // The child only writes (no OpenMP, no doctest) and leaves with _exit.
      try {
        checkpoint_save(root, big.contents(2, 1.0), retention);
      } catch (...) {
        ::_exit(2);
      }
      ::_exit(0);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (temp_bytes(root, child) < kill_after && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    int64_t written = temp_bytes(root, child);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE_MESSAGE(WIFSIGNALED(status), "the writer finished before it could be killed; make the model bigger");
    MESSAGE("killed the writer after " << written << " bytes");

    // The old checkpoint is what `latest` names, intact; the half-written one is not listed.
    CHECK(checkpoint_latest(root) == root + "/step-000001");
    CHECK(small.matches(checkpoint_load(checkpoint_latest(root), small.model_specs(), small.optimizer_specs())));
    REQUIRE(checkpoint_list(root).size() == 1);
    CHECK(temp_bytes(root, child) >= 0);  // the dead writer's leftovers...

    checkpoint_save(root, small.contents(3, 1.5), retention);
    CHECK(temp_bytes(root, child) == -1);  // ...are removed by the next save
    CHECK(checkpoint_latest(root) == root + "/step-000003");
  }
}
