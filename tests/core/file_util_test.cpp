// Temporaries of killed writers ("<path>.tmp.<pid>" of a pid that no longer
// runs) are removed; those of live processes and other names are kept.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "io/file_util.h"
#include "support/temp_dir.h"

using namespace rfa;

namespace {

// The pid of a child that has exited and been reaped: no process has it (until reused).
long dead_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  REQUIRE(pid > 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return static_cast<long>(pid);
}

}  // namespace

TEST_CASE("file util: stale temporaries of dead pids are removed, nothing else") {
  test::TempDir dir;
  const std::string target = dir / "corpus.tokens";
  const long dead = dead_pid();
  const std::string stale = dir.write("corpus.tokens.tmp." + std::to_string(dead), "half");
  const std::vector<std::string> kept = {
      dir.write("corpus.tokens.tmp." + std::to_string(::getpid()), "mine, in progress"),
      dir.write("corpus.tokens.tmp." + std::to_string(::getppid()), "a live writer"),
      dir.write("corpus.tokens.tmp.x" + std::to_string(dead), "not a pid"),
      dir.write("corpus.tokens.tmp." + std::to_string(dead) + ".bak", "not our pattern"),
      dir.write("corpus.tokens.tmp.0" + std::to_string(dead), "leading zero: not a name we write"),
      dir.write("other.tokens.tmp." + std::to_string(dead), "another target's"),
      dir.write("corpus.tokens", "the real file"),
  };
  std::filesystem::create_directory(dir / ("corpus.tokens.tmp." + std::to_string(dead_pid())));  // not a file

  CHECK(file_temp_remove_stale(target) == std::vector<std::string>{stale});
  CHECK_FALSE(std::filesystem::exists(stale));
  for (const std::string& k : kept) CHECK(std::filesystem::exists(k));
  CHECK(file_temp_remove_stale(target).empty());
  CHECK(file_temp_remove_stale(dir / "missing-dir/x.tokens").empty());
}
