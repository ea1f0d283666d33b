// The state pool: blocks from huge-page regions up to its limit, recycled by size, and
// operator new for small blocks, when off, and past the limit.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "serve/state_pool.h"

using namespace rfa;

namespace {

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }
constexpr size_t kState = 600 * 1024 + 4;  // a 6x384 state's size, not a multiple of 64

}  // namespace

TEST_CASE("state pool: off until given a limit; small blocks never pooled") {
  StatePool pool;
  void* p = pool.allocate(kState);
  CHECK(aligned64(p));
  CHECK(pool.stats().mapped == 0);
  pool.deallocate(p, kState);
  pool.set_limit(64 << 20);
  void* small = pool.allocate(StatePool::kMinBlock - 4);
  CHECK(aligned64(small));
  CHECK(pool.stats().mapped == 0);
  pool.deallocate(small, StatePool::kMinBlock - 4);
}

TEST_CASE("state pool: blocks carved from a region, kept when freed and handed out again by size") {
  StatePool pool;
  pool.set_limit(64 << 20);
  char* a = static_cast<char*>(pool.allocate(kState));
  REQUIRE(pool.stats().mapped == StatePool::kRegionBytes);
  const size_t rounded = (kState + 63) / 64 * 64;
  CHECK(pool.stats().in_use == rounded);
  CHECK(aligned64(a));
  std::memset(a, 0x5a, kState);  // the whole block is writable
  char* b = static_cast<char*>(pool.allocate(kState));
  CHECK(b == a + rounded);  // the next block of the region
  std::memset(b, 0x11, kState);
  CHECK(static_cast<unsigned char>(a[kState - 1]) == 0x5a);  // blocks do not overlap
  pool.deallocate(a, kState);
  CHECK(pool.stats().free == rounded);
  CHECK(pool.stats().in_use == rounded);
  void* c = pool.allocate(kState);
  CHECK(c == a);  // the freed block, not new memory
  void* d = pool.allocate(2 * kState);  // another size: carved anew
  CHECK(d != a);
  CHECK(d == b + rounded);
  CHECK(pool.stats().free == 0);
  for (auto [p, n] : {std::pair<void*, size_t>{b, kState}, {c, kState}, {d, 2 * kState}}) pool.deallocate(p, n);
  CHECK(pool.stats().in_use == 0);
  CHECK(pool.stats().mapped == StatePool::kRegionBytes);  // regions are kept
}

TEST_CASE("state pool: never maps past its limit; operator new takes the rest") {
  StatePool pool;
  pool.set_limit(StatePool::kRegionBytes + 1);  // room for one region only
  std::vector<void*> blocks;
  const size_t rounded = (kState + 63) / 64 * 64, per_region = StatePool::kRegionBytes / rounded;
  for (size_t i = 0; i < per_region + 5; ++i) {
    blocks.push_back(pool.allocate(kState));
    std::memset(blocks.back(), int(i), kState);
  }
  CHECK(pool.stats().mapped == StatePool::kRegionBytes);
  CHECK(pool.stats().in_use == per_region * rounded);  // the last 5 from operator new
  for (void* p : blocks) pool.deallocate(p, kState);
  CHECK(pool.stats().in_use == 0);
  CHECK(pool.stats().free == per_region * rounded);
  pool.set_limit(1);  // a limit only grows
  CHECK(pool.allocate(kState) != nullptr);
  CHECK(pool.stats().free == per_region * rounded - rounded);
}

TEST_CASE("state pool: StateFloats is a vector like any other") {
  StateFloats x(200000, 1.5f), y;
  y = x;
  CHECK(y == x);
  y.resize(300000);
  CHECK(y[299999] == 0.0f);
  CHECK(y[0] == 1.5f);
}
