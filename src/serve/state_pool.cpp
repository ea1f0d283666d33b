#include "serve/state_pool.h"

#include <algorithm>
#include <cstdint>

#include "tensor/huge_pages.h"

namespace rfa {
namespace {

constexpr size_t kAlign = 64;

size_t rounded(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// A region of kRegionBytes on a 2 MiB boundary in huge pages (tensor/huge_pages.h); null when the
// system has no memory to map.
char* map_region() { return static_cast<char*>(huge_pages_map(StatePool::kRegionBytes)); }

}  // namespace

StatePool& StatePool::shared() {
  static StatePool* pool = new StatePool;  // never destroyed: a state freed during exit still finds it
  return *pool;
}

StatePool::~StatePool() {
  for (char* r : regions_) huge_pages_unmap(r, kRegionBytes);
}

void StatePool::set_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = std::max(limit_, bytes);
}

bool StatePool::owns(const void* p) const {
  const char* c = static_cast<const char*>(p);
  for (const char* r : regions_)
    if (c >= r && c < r + kRegionBytes) return true;
  return false;
}

void* StatePool::allocate(size_t bytes) {
  if (bytes >= kMinBlock && bytes <= kRegionBytes) {
    const size_t size = rounded(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = free_.find(size); it != free_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      stats_.free -= size;
      stats_.in_use += size;
      return p;
    }
    if (left_ < size && stats_.mapped + kRegionBytes <= limit_) {
      if (char* region = map_region()) {
        regions_.push_back(region);
        next_ = region;
        left_ = kRegionBytes;  // a block that did not fit the last region's tail leaves it unused
        stats_.mapped += kRegionBytes;
      }
    }
    if (left_ >= size) {
      void* p = next_;
      next_ += size;
      left_ -= size;
      stats_.in_use += size;
      return p;
    }
  }
  return ::operator new(bytes, std::align_val_t(kAlign));
}

void StatePool::deallocate(void* p, size_t bytes) {
  if (!p) return;
  if (bytes >= kMinBlock && bytes <= kRegionBytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (owns(p)) {
      const size_t size = rounded(bytes);
      free_[size].push_back(p);
      stats_.in_use -= size;
      stats_.free += size;
      return;
    }
  }
  ::operator delete(p, std::align_val_t(kAlign));
}

StatePool::Stats StatePool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace rfa
