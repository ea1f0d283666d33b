// The load client's pure parts: the --url forms it takes and refuses, and its prompts.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "core/error.h"
#include "serve/load_client.h"

using namespace rfa;

TEST_CASE("load client: --url forms") {
  LoadTarget t = load_target_parse("http://127.0.0.1:8080");
  CHECK(t.host == "127.0.0.1");
  CHECK(t.port == 8080);
  t = load_target_parse("http://localhost/");
  CHECK(t.host == "localhost");
  CHECK(t.port == 80);
  t = load_target_parse("http://[::1]:9000");
  CHECK(t.host == "::1");
  CHECK(t.port == 9000);
  for (const char* bad : {"https://127.0.0.1:8080", "127.0.0.1:8080", "http://:8080", "http://h:0", "http://h:99999",
                          "http://h:80x", "http://h:80/v1/completions", "http://[::1"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(load_target_parse(bad), Error);
  }
}

TEST_CASE("load client: prompts are letters and spaces, a pure function of the seed, different per seed") {
  CHECK(load_prompt(16, 3) == load_prompt(16, 3));
  std::set<std::string> seen;
  for (uint64_t seed = 1; seed <= 64; ++seed) {
    const std::string p = load_prompt(16, seed);
    CHECK(p.size() == 16);
    CHECK(p.find_first_not_of("abcdefghijklmnopqrstuvwxyz ") == std::string::npos);
    seen.insert(p);
  }
  CHECK(seen.size() == 64);
}
