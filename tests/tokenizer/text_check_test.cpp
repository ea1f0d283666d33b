// Corpora and --data texts must be UTF-8 text: the first malformed byte or NUL
// is reported with its offset, also when it lies across a 1 MiB block boundary.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <string>

#include "core/error.h"
#include "support/temp_dir.h"
#include "tokenizer/text_check.h"

using namespace rfa;

TEST_CASE("text check: the first fault, malformed UTF-8 or NUL, with its offset") {
  CHECK_FALSE(text_fault("plain text, café 中文 😀\n\ttabs\r\n").has_value());
  CHECK_FALSE(text_fault("").has_value());

  auto f = text_fault("caf\xE9 au lait");  // Latin-1 é
  REQUIRE(f.has_value());
  CHECK(f->offset == 3);
  CHECK(f->byte == 0xE9);
  CHECK_FALSE(f->nul);

  f = text_fault(std::string("a\0b\xff", 4));  // the NUL comes first
  REQUIRE(f.has_value());
  CHECK(f->offset == 1);
  CHECK(f->nul);
  f = text_fault(std::string("a\xff\0", 3));  // the bad byte comes first
  REQUIRE(f.has_value());
  CHECK(f->offset == 1);
  CHECK_FALSE(f->nul);
  // UTF-16LE text: valid UTF-8 but for its NULs.
  f = text_fault(std::string("H\0i\0", 4));
  REQUIRE(f.has_value());
  CHECK(f->nul);

  CHECK_THROWS_WITH_AS(text_check("ok\xC3", "x.txt", "corpus", 100),
                       doctest::Contains("corpus x.txt is not UTF-8 text: invalid UTF-8 at byte offset 102 (byte 0xc3)"),
                       Error);
  CHECK_THROWS_WITH_AS(text_check(std::string("ok\0", 3), "x.txt", "corpus"),
                       doctest::Contains("NUL byte at byte offset 2"), Error);
  CHECK_NOTHROW(text_check("ok", "x.txt", "corpus"));
}

TEST_CASE("text check: a file is checked block by block, characters cut by a block end are fine") {
  test::TempDir dir;
  const size_t block = 1 << 20;
  // A 3-byte character straddling the first block boundary, then a 4-byte one straddling the second.
  std::string text(block - 1, 'a');
  text += "中";
  text += std::string(block - text.size() % block - 2, 'b');
  text += "😀";
  text += "tail\n";
  CHECK_NOTHROW(text_file_check(dir.write("ok.txt", text), "corpus"));

  // ASCII bytes on either side of each boundary character, and both ends of the file.
  for (size_t at : {size_t{0}, block - 2, block + 2, 2 * block - 3, 2 * block + 2, text.size() - 1}) {
    CAPTURE(at);
    std::string bad = text;
    bad[at] = '\xFF';
    std::string expected = "byte offset " + std::to_string(at);
    CHECK_THROWS_WITH_AS(text_file_check(dir.write("bad.txt", bad), "corpus"), doctest::Contains(expected.c_str()),
                         Error);
    bad[at] = '\0';
    CHECK_THROWS_WITH_AS(text_file_check(dir.write("nul.txt", bad), "corpus"),
                         doctest::Contains(("NUL byte at " + expected).c_str()), Error);
  }
  // A broken continuation byte just past a block boundary is reported at its character's first byte.
  std::string bad = text;
  bad[block] = 'x';
  CHECK_THROWS_WITH_AS(text_file_check(dir.write("cont.txt", bad), "corpus"),
                       doctest::Contains(("at byte offset " + std::to_string(block - 1) + " (byte 0xe4)").c_str()),
                       Error);
  // A character cut by the end of the file is malformed.
  CHECK_THROWS_WITH_AS(text_file_check(dir.write("cut.txt", "abc\xE4\xB8"), "corpus"),
                       doctest::Contains("at byte offset 3"), Error);
  CHECK_THROWS_WITH_AS(text_file_check(dir.write("empty.txt", ""), "corpus"), doctest::Contains("is empty"), Error);
  CHECK_THROWS_WITH_AS(text_file_check(dir.file("missing.txt"), "corpus"), doctest::Contains("cannot open corpus"),
                       Error);
  // A FIFO blocked fopen forever; a directory read as a late, vague error.
  const std::string fifo = dir.file("fifo.txt");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK_THROWS_WITH_AS(text_file_check(fifo, "corpus"), doctest::Contains("is a pipe, device or socket, not a text"),
                       Error);
  CHECK_THROWS_WITH_AS(text_file_check(dir.path(), "corpus"), doctest::Contains("is a directory, not a text file"),
                       Error);
}
