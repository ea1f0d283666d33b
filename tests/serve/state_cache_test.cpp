// StateCache: the longest cached prefix of a prompt is found; the byte bound holds after
// every insertion, least recently used first out.
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "serve/state_cache.h"

using namespace rfa;

namespace {

std::shared_ptr<const CacheEntry> entry(std::vector<int32_t> tokens, size_t floats = 100) {
  auto e = std::make_shared<CacheEntry>();
  e->tokens = std::move(tokens);
  e->state.position = static_cast<int64_t>(e->tokens.size());
  e->state.state.assign(floats, 1.0f);
  e->state.logits.assign(10, 0.0f);
  return e;
}

}  // namespace

TEST_CASE("state cache: the longest key that begins the tokens, the whole of them included") {
  StateCache cache(1 << 20);
  cache.insert(entry({1, 2}));
  cache.insert(entry({1, 2, 3, 4}));
  cache.insert(entry({1, 2, 5}));
  cache.insert(entry({7}));
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 9};
  auto hit = cache.find_prefix(prompt);
  REQUIRE(hit);
  CHECK(hit->tokens == std::vector<int32_t>{1, 2, 3, 4});
  CHECK(cache.find_prefix(std::vector<int32_t>{1, 2, 3})->tokens == std::vector<int32_t>{1, 2});
  CHECK(cache.find_prefix(std::vector<int32_t>{1, 2, 5})->tokens == std::vector<int32_t>{1, 2, 5});
  CHECK_FALSE(cache.find_prefix(std::vector<int32_t>{2, 1}));
  CHECK_FALSE(cache.find_exact(std::vector<int32_t>{1, 2, 3}));
  CHECK(cache.find_exact(std::vector<int32_t>{7}));
  const StateCacheStats s = cache.stats();
  CHECK(s.hits == 3);
  CHECK(s.misses == 1);
  CHECK(s.entries == 4);
}

TEST_CASE("state cache: never over its bound; the least recently used goes first; a too large entry is refused") {
  const int64_t one = entry({0})->bytes();
  StateCache cache(3 * one + one / 2);  // room for three
  for (int32_t i = 0; i < 3; ++i) CHECK(cache.insert(entry({i})));
  CHECK(cache.find_prefix(std::vector<int32_t>{0}));  // 0 is now the most recent; 1 the least
  CHECK(cache.insert(entry({3})));
  CHECK(cache.stats().bytes <= cache.stats().limit);
  CHECK(cache.stats().entries == 3);
  CHECK(cache.stats().evictions == 1);
  CHECK_FALSE(cache.find_exact(std::vector<int32_t>{1}));
  CHECK(cache.find_exact(std::vector<int32_t>{0}));
  for (int32_t i = 10; i < 200; ++i) {
    cache.insert(entry({i, i + 1}, static_cast<size_t>(i)));
    REQUIRE(cache.stats().bytes <= cache.stats().limit);
  }
  CHECK_FALSE(cache.insert(entry({5}, 100000)));  // alone larger than the bound
  CHECK_FALSE(cache.find_exact(std::vector<int32_t>{5}));
  CHECK(cache.stats().bytes <= cache.stats().limit);
}

TEST_CASE("state cache: storing a key again replaces its entry") {
  StateCache cache(1 << 20);
  cache.insert(entry({4, 5}, 10));
  cache.insert(entry({4, 5}, 20));
  CHECK(cache.stats().entries == 1);
  CHECK(cache.find_exact(std::vector<int32_t>{4, 5})->state.state.size() == 20);
  CHECK(cache.stats().bytes == entry({4, 5}, 20)->bytes());
}
