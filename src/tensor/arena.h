#pragma once
// The arena: one 64-byte aligned (from 2 MiB on: huge-page aligned), zeroed allocation
// sized up front (llm.c's habit). Everything a model or a training step touches is carved out of an
// arena by offsets computed before allocation, so the hot loop never allocates.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"
#include "tensor/huge_pages.h"

namespace rfa {

inline constexpr size_t kArenaAlign = 64;  // one cache line, one AVX-512 register
// Arenas from this size on start on a 2 MiB boundary, are a whole number of 2 MiB, and are
// madvised for transparent huge pages before they are first touched (where the kernel offers
// them: transparent_hugepage "madvise" or "always"). A model's weights, states and activations
// are tens of MB read in streams every step: with 4 KiB pages each stream crosses a page (a TLB
// miss, and the hardware prefetch starting over) every 64 lines.
inline constexpr size_t kArenaHugeBytes = kHugePageBytes;

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kArenaMapped = false;  // AddressSanitizer checks heap blocks' bounds, not a mapping's
#else
inline constexpr bool kArenaMapped = true;
#endif

// Whether an arena of `bytes` is a mapping (whose pages release_pages can give back) or a heap block.
constexpr bool arena_mapped(size_t bytes) { return kArenaMapped && bytes >= kArenaHugeBytes; }

// Rounds an element count up so the next slice starts on a 64-byte boundary.
template <typename T>
constexpr int64_t arena_round(int64_t count) {
  constexpr int64_t per_line = static_cast<int64_t>(kArenaAlign / sizeof(T));
  return (count + per_line - 1) / per_line * per_line;
}

// A typed arena of `size` elements of T; movable, not copyable.
//
// From kArenaHugeBytes on the memory comes straight from the kernel (an anonymous mapping), whose
// pages are zero by its guarantee and take memory only once touched: nothing is written up front.
// A loaded model's gradient half (model.h) is never touched by generate, eval or serve, so it costs
// no resident memory there (a 12 x 768 model: 366 MB), and loading skips writing zeros over both
// halves. Smaller arenas (and every arena under AddressSanitizer, which checks heap blocks'
// bounds but not a mapping's) are heap blocks, zero-filled.
template <typename T>
class Arena {
 public:
  Arena() = default;
  explicit Arena(int64_t size) : size_(size) {
    RFA_ASSERT(size >= 0, "arena size {}", size);
    const size_t used = static_cast<size_t>(size) * sizeof(T);
    const size_t align = used >= kArenaHugeBytes ? kArenaHugeBytes : kArenaAlign;
    size_t bytes = (used + align - 1) / align * align;
    if (bytes == 0) bytes = kArenaAlign;
    const bool mapped = arena_mapped(used);
    void* p = mapped ? map_zeroed(bytes) : heap_zeroed(align, bytes);
    data_ = std::unique_ptr<T, Free>(static_cast<T*>(p), Free{bytes, mapped});
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  int64_t size() const { return size_; }
  T* at(int64_t offset) {
    RFA_ASSERT(offset >= 0 && offset <= size_, "arena offset {} outside [0, {}]", offset, size_);
    return data_.get() + offset;
  }
  const T* at(int64_t offset) const {
    RFA_ASSERT(offset >= 0 && offset <= size_, "arena offset {} outside [0, {}]", offset, size_);
    return data_.get() + offset;
  }
  void zero() { std::memset(data_.get(), 0, static_cast<size_t>(size_) * sizeof(T)); }
  // Gives the whole pages of `granule` bytes (0: the base page; else a multiple of it, e.g.
  // kHugePageBytes) inside [p, p + count) back to the kernel (madvise DONTNEED): they take no memory
  // until written again and read zero meanwhile; the partial pages at either end stay. Only a mapped
  // arena's: a heap block's (a small arena, or any under AddressSanitizer) are kept. Returns the bytes
  // given back. Safe to call from several threads on disjoint ranges.
  int64_t release_pages(const T* p, int64_t count, size_t granule = 0) {
    static const uintptr_t base_page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));  // 4 KiB on x86-64
    RFA_ASSERT(p >= data_.get() && count >= 0 && p + count <= data_.get() + size_ && granule % base_page == 0,
               "release of {} elements, pages of {} bytes", count, granule);
    if (!data_.get_deleter().mapped) return 0;
    const uintptr_t page = granule ? granule : base_page;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
    const uintptr_t first = (begin + page - 1) / page * page, last = (begin + sizeof(T) * size_t(count)) / page * page;
    if (last <= first) return 0;
    if (madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;  // advice: memory kept
    return static_cast<int64_t>(last - first);
  }

 private:
  static void* heap_zeroed(size_t align, size_t bytes) {
    void* p = std::aligned_alloc(align, bytes);
    if (!p) fail("cannot allocate {:.1f} MiB for an arena; reduce the model or batch size", bytes / 1048576.0);
#ifdef MADV_HUGEPAGE
    if (align == kArenaHugeBytes) madvise(p, bytes, MADV_HUGEPAGE);  // advice: no error if refused
#endif
    std::memset(p, 0, bytes);
    return p;
  }
  static void* map_zeroed(size_t bytes) {
    void* p = huge_pages_map(bytes);
    if (!p) fail("cannot allocate {:.1f} MiB for an arena; reduce the model or batch size", bytes / 1048576.0);
    return p;
  }
  struct Free {
    size_t bytes = 0;
    bool mapped = false;
    void operator()(T* p) const {
      if (mapped) huge_pages_unmap(p, bytes);
      else std::free(p);
    }
  };
  std::unique_ptr<T, Free> data_;
  int64_t size_ = 0;
};

// Plans slices of an arena before it exists: take() returns an offset and
// advances by the count rounded to a cache line.
template <typename T>
class ArenaPlan {
 public:
  int64_t take(int64_t count) {
    RFA_ASSERT(count >= 0, "slice of {} elements", count);
    int64_t offset = size_;
    size_ += arena_round<T>(count);
    return offset;
  }
  int64_t size() const { return size_; }

 private:
  int64_t size_ = 0;
};

}  // namespace rfa
