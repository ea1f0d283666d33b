#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

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

// Pages of [p, p + bytes) in memory (mincore), p page-aligned.
int64_t resident_pages(const void* p, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  REQUIRE(mincore(const_cast<void*>(p), bytes, in.data()) == 0);
  int64_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

// A loaded model's gradient half is never touched by generate, eval or serve: a large arena comes
// zeroed from the kernel and takes memory only where written (not under AddressSanitizer, whose
// arenas are heap blocks, zero-filled).
TEST_CASE("arena: a large arena takes memory only where it is touched") {
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("AddressSanitizer build: arenas are zero-filled heap blocks");
#else
  const int64_t huge = int64_t(kArenaHugeBytes / sizeof(float));
  Arena<float> arena(8 * huge);  // 16 MiB
  const size_t bytes = 8 * kArenaHugeBytes;
  CHECK(resident_pages(arena.data(), bytes) == 0);
  arena.data()[0] = 1.0f;  // the first page (or huge page) only
  const int64_t touched = resident_pages(arena.data(), bytes);
  CHECK(touched >= 1);
  CHECK(touched <= int64_t(kArenaHugeBytes / sysconf(_SC_PAGESIZE)));
  CHECK(arena.data()[1] == 0.0f);
  CHECK(arena.data()[8 * huge - 1] == 0.0f);
#endif
}

// release_pages (a decoder giving back the model's matrices it packed): the whole pages inside the
// range go (resident no more, reading zero), the partial ones at its ends and everything outside
// keep their values; with a huge granule only whole 2 MiB pages go.
TEST_CASE("arena: release_pages gives back the whole pages inside a range, nothing outside it") {
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("AddressSanitizer build: arenas are heap blocks, which keep their pages");
#else
  const int64_t huge = int64_t(kArenaHugeBytes / sizeof(float)), page = sysconf(_SC_PAGESIZE) / int64_t(sizeof(float));
  Arena<float> arena(4 * huge);
  for (int64_t i = 0; i < arena.size(); ++i) arena.data()[i] = float(i % 1000 + 1);
  auto same_as_written = [&](int64_t from, int64_t to) {
    bool same = true;
    for (int64_t i = from; i < to; ++i) same &= arena.data()[i] == float(i % 1000 + 1);
    return same;
  };
  auto zero = [&](int64_t from, int64_t to) {
    bool z = true;
    for (int64_t i = from; i < to; ++i) z &= arena.data()[i] == 0.0f;
    return z;
  };
  // From 3 elements into the first page to 5 before the end of the second huge page.
  const int64_t begin = 3, end = 2 * huge - 5;
  CHECK(arena.release_pages(arena.data() + begin, end - begin, kArenaHugeBytes) == 0);  // no whole huge page in it
  CHECK(same_as_written(0, arena.size()));
  const int64_t released = arena.release_pages(arena.data() + begin, end - begin);
  CHECK(released == (2 * huge - 2 * page) * int64_t(sizeof(float)));
  CHECK(resident_pages(arena.data() + page, size_t(released)) == 0);  // before reading them maps the zero page
  CHECK(same_as_written(0, page));
  CHECK(zero(page, 2 * huge - page));
  CHECK(same_as_written(2 * huge - page, arena.size()));
  // A huge granule: the third huge page, wholly inside [2 huge - 1, 4 huge - 1), goes; the rest stays.
  CHECK(arena.release_pages(arena.data() + 2 * huge - 1, 2 * huge, kArenaHugeBytes) == int64_t(kArenaHugeBytes));
  CHECK(same_as_written(2 * huge - page, 2 * huge));
  CHECK(zero(2 * huge, 3 * huge));
  CHECK(same_as_written(3 * huge, arena.size()));
  CHECK_THROWS(arena.release_pages(arena.data() + 3 * huge, 2 * huge));  // past the end
#endif
}
