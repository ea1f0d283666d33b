#pragma once
// Memory straight from the kernel for long-lived buffers of megabytes (a model's or a step's arena,
// the server's state regions): an anonymous mapping on a 2 MiB boundary, madvised for transparent
// huge pages before any page is touched (where the kernel offers them: transparent_hugepage
// "madvise" or "always"; elsewhere plain pages). Its pages are zero by the kernel's guarantee and
// take memory only once written. With 4 KiB pages a stream of tens of MB crosses a page (a TLB miss,
// the hardware prefetch starting over) every 64 lines, and a first touch faults every 4 KiB.
#include <cstddef>

namespace rfa {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;

// `bytes` (a multiple of kHugePageBytes) on a kHugePageBytes boundary, or null when the system has no
// memory to map. Give it back with huge_pages_unmap(p, bytes).
void* huge_pages_map(size_t bytes);
void huge_pages_unmap(void* p, size_t bytes);

}  // namespace rfa
