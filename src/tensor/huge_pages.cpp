#include "tensor/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace rfa {

void* huge_pages_map(size_t bytes) {
  // Mapped with one boundary's worth to spare; the slack before and after goes back at once.
  const size_t span = bytes + kHugePageBytes;
  void* m = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(m);
  const uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > start) munmap(m, aligned - start);
  if (start + span > aligned + bytes) munmap(reinterpret_cast<void*>(aligned + bytes), start + span - (aligned + bytes));
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);  // advice: no error if refused
#endif
  return reinterpret_cast<void*>(aligned);
}

void huge_pages_unmap(void* p, size_t bytes) { munmap(p, bytes); }

}  // namespace rfa
