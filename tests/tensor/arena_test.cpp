#include <doctest/doctest.h>

#include <cstdint>

#include "core/error.h"
#include "tensor/arena.h"

using namespace rfa;

TEST_CASE("arena: aligned, zeroed, planned slices start on cache lines") {
  ArenaPlan<float> plan;
  int64_t a = plan.take(3), b = plan.take(17), c = plan.take(0), d = plan.take(16);
  CHECK(a == 0);
  CHECK(b == 16);
  CHECK(c == 48);
  CHECK(d == 48);
  Arena<float> arena(plan.size());
  CHECK(reinterpret_cast<uintptr_t>(arena.data()) % 64 == 0);
  CHECK(reinterpret_cast<uintptr_t>(arena.at(b)) % 64 == 0);
  for (int64_t i = 0; i < arena.size(); ++i) CHECK(arena.data()[i] == 0.0f);
  CHECK_THROWS(arena.at(plan.size() + 1));
}

TEST_CASE("arena: from 2 MiB on, on a 2 MiB boundary (huge pages), zeroed; smaller ones on cache lines") {
  const int64_t huge = int64_t(kArenaHugeBytes / sizeof(float));
  for (int64_t size : {huge - 1, huge, 3 * huge + 5}) {
    CAPTURE(size);
    Arena<float> arena(size);
    const uintptr_t at = reinterpret_cast<uintptr_t>(arena.data());
    CHECK(at % (size >= huge ? kArenaHugeBytes : kArenaAlign) == 0);
    if (size < huge) CHECK(at % 64 == 0);
    bool zero = true;
    for (int64_t i = 0; i < size; ++i) zero &= arena.data()[i] == 0.0f;
    CHECK(zero);
    arena.data()[size - 1] = 1.0f;  // the last element is inside the allocation (ASan would say)
  }
}
