#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "core/error.h"
#include "io/file_io.h"
#include "io/file_util.h"
#include "support/temp_dir.h"

using namespace rfa;
using rfa::test::TempDir;

TEST_CASE("file reads: a directory or a FIFO is refused at once, naming what it is") {
  TempDir dir;
  const std::string sub = dir.file("sub");
  std::filesystem::create_directory(sub);
  // file_read_all once took a directory's size as -1 (std::bad_alloc, exit 2).
  CHECK_THROWS_WITH_AS(file_read_all(sub), doctest::Contains("it is a directory"), Error);
  CHECK_THROWS_WITH_AS(file_read_bytes(sub), doctest::Contains("it is a directory"), Error);
  // Opening a FIFO that no one writes waited forever (a --load-state, tokenizer or latest path).
  const std::string fifo = dir.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK_THROWS_WITH_AS(file_read_all(fifo), doctest::Contains("not a regular file"), Error);
  CHECK_THROWS_WITH_AS(file_read_text(fifo), doctest::Contains("not a regular file"), Error);
  CHECK(file_read_all(dir.write("a.txt", "abc")) == "abc");
}

TEST_CASE("file writes: a full file system says so and how to fix it") {
  // /dev/full fails every write with ENOSPC.
  FileWriter writer("/dev/full");
  CHECK_THROWS_WITH_AS(writer.write("x"), doctest::Contains("No space left on device (the file system is full"),
                       Error);
}

TEST_CASE("file_commit: a failed rename gives its own reason, not the cleanup's") {
  TempDir dir;
  const std::string target = dir.file("target");
  std::filesystem::create_directories(target + "/inside");  // a non-empty directory cannot be replaced by a file
  const std::string temp = dir.write("target.tmp.1", "bytes");
  // The reason was "Success": removing the temp file reset the error code before it was printed.
  try {
    file_commit(temp, target);
    FAIL("file_commit over a directory succeeded");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("Success") == std::string::npos);
    CHECK(what.find("Is a directory") != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(temp));
}
