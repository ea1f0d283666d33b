#pragma once
// A row of n elements ending exactly at a page that may not be read or written: any access past
// the row's last element faults, so a helper that must stop there (kernels/simd.h's first-lanes
// loads and stores, kernels/vector_math.h's copy_row and zero_row) is shown to.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

namespace rfa::test {

template <typename T>
struct RowAtPageEnd {
  long page = sysconf(_SC_PAGESIZE);
  char* base = nullptr;
  T* row = nullptr;
  explicit RowAtPageEnd(int n) {
    base = static_cast<char*>(mmap(nullptr, size_t(2 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(base != MAP_FAILED);
    REQUIRE(mprotect(base + page, size_t(page), PROT_NONE) == 0);
    row = reinterpret_cast<T*>(base + page) - n;
  }
  ~RowAtPageEnd() { munmap(base, size_t(2 * page)); }
};

}  // namespace rfa::test
