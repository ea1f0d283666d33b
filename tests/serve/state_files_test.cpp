// State files: an entry and its chat messages round-trip; another model, another layout, a
// link, a corrupt value or a missing file are refused naming the file.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "serve/state_files.h"
#include "support/temp_dir.h"

using namespace rfa;

namespace {

StateFile sample_file() {
  auto e = std::make_shared<CacheEntry>();
  e->tokens = {5, 6, 7};
  e->state.position = 3;
  e->state.state = {0.5f, -1.0f, 2.0f, 4.0f};
  e->state.logits.assign(10, 0.25f);
  return {e, {{"user", "hi"}, {"assistant", "ho\n"}}};
}

}  // namespace

TEST_CASE("state files: an entry and its messages come back as saved") {
  test::TempDir dir;
  StateFiles files(dir.path(), "sum1", "layout A", 10);
  files.save("conv-1", sample_file());
  CHECK(std::filesystem::exists(dir.path() + "/conv-1.state"));
  const StateFile back = files.load("conv-1");
  CHECK(back.entry->tokens == std::vector<int32_t>{5, 6, 7});
  CHECK(back.entry->state.position == 3);
  CHECK(back.entry->state.state == sample_file().entry->state.state);
  CHECK(back.entry->state.logits == sample_file().entry->state.logits);
  REQUIRE(back.messages.size() == 2);
  CHECK(back.messages[1].content == "ho\n");
}

TEST_CASE("state files: refused from another model or layout, through a link, when corrupt or missing") {
  test::TempDir dir;
  StateFiles files(dir.path(), "sum1", "layout A", 10);
  files.save("a", sample_file());
  CHECK_THROWS_WITH_AS(StateFiles(dir.path(), "sum2", "layout A", 10).load("a"), doctest::Contains("another model"),
                       Error);
  CHECK_THROWS_WITH_AS(StateFiles(dir.path(), "sum1", "layout B", 10).load("a"), doctest::Contains("layout"), Error);
  CHECK_THROWS_WITH_AS(StateFiles(dir.path(), "sum1", "layout A", 11).load("a"), doctest::Contains("corrupt"), Error);
  CHECK_THROWS_WITH_AS(files.load("missing"), doctest::Contains("does not exist"), Error);
  CHECK_THROWS_WITH_AS(files.load("../a"), doctest::Contains("not allowed"), Error);
  CHECK_THROWS_WITH_AS(files.save("a/b", sample_file()), doctest::Contains("not allowed"), Error);
  std::filesystem::create_symlink(dir.path() + "/a.state", dir.path() + "/link.state");
  CHECK_THROWS_WITH_AS(files.load("link"), doctest::Contains("symbolic link"), Error);
  StateFile bad = sample_file();
  auto e = std::make_shared<CacheEntry>(*bad.entry);
  e->state.state[1] = std::nanf("");
  files.save("nan", {e, {}});
  CHECK_THROWS_WITH_AS(files.load("nan"), doctest::Contains("corrupt"), Error);
  std::ofstream(dir.path() + "/junk.state") << "not a safetensors file";
  CHECK_THROWS_AS(files.load("junk"), Error);
  CHECK_THROWS_WITH_AS(StateFiles(dir.path() + "/nowhere", "s", "l", 10), doctest::Contains("mkdir -p"), Error);
}
