#pragma once
// Memory for the states the server caches (SlotState::state), in regions given 2 MiB
// transparent huge pages. A cached state is hundreds of KiB (0.6 MB at 6x384), and each
// store copies one into memory nobody has touched: one page fault per 4 KiB, which on a
// virtual machine cost 2.3-2.9 ms a store, 8-10% of a 64-stream server's time while its
// cache grew (docs/serving.md). From a region madvised MADV_HUGEPAGE it is one fault per 2 MiB.
//
// Blocks of 64 KiB and more come from the pool when it is on (set_limit, by `rfa serve` and
// `rfa chat` to their cache's bound); smaller ones, and every block once the pool holds its
// limit, from operator new. Freed blocks are kept for the next block of the same size (an RFA
// model's states are all one size) and the regions are never given back: the pool's memory
// is bounded by its limit, as the cache's is by its own. Thread safe.
#include <cstddef>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace rfa {

class StatePool {
 public:
  static StatePool& shared();  // the one the states use (never destroyed)
  StatePool() = default;
  ~StatePool();  // unmaps the regions: every pooled block must be gone
  StatePool(const StatePool&) = delete;
  StatePool& operator=(const StatePool&) = delete;

  // The most bytes of regions the pool maps (0, the default: off). Only grows the bound.
  void set_limit(size_t bytes);
  void* allocate(size_t bytes);  // 64-byte aligned
  void deallocate(void* p, size_t bytes);

  struct Stats {
    size_t mapped = 0, in_use = 0, free = 0;  // bytes: regions, live blocks, blocks kept for reuse
  };
  Stats stats() const;

  static constexpr size_t kRegionBytes = size_t(32) << 20;  // 16 huge pages
  static constexpr size_t kMinBlock = size_t(64) << 10;

 private:
  bool owns(const void* p) const;  // under mutex_

  mutable std::mutex mutex_;
  size_t limit_ = 0;
  std::vector<char*> regions_;  // each kRegionBytes, 2 MiB aligned
  char* next_ = nullptr;        // the next unused byte of the last region
  size_t left_ = 0;             // and how many follow it
  std::unordered_map<size_t, std::vector<void*>> free_;  // by rounded size
  Stats stats_;
};

// std::allocator's interface over StatePool::shared().
template <typename T>
struct StatePoolAllocator {
  using value_type = T;
  StatePoolAllocator() = default;
  template <typename U>
  StatePoolAllocator(const StatePoolAllocator<U>&) {}
  T* allocate(size_t n) {
    if (n > size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(StatePool::shared().allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) { StatePool::shared().deallocate(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const StatePoolAllocator<U>&) const { return true; }
};

using StateFloats = std::vector<float, StatePoolAllocator<float>>;

}  // namespace rfa
