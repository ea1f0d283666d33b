#pragma once
// The arena: one 64-byte aligned, zero-filled allocation sized up front (llm.c's
// habit). Everything a model or a training step touches is carved out of an
// arena by offsets computed before allocation, so the hot loop never allocates.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace rfa {

inline constexpr size_t kArenaAlign = 64;  // one cache line, one AVX-512 register

// Rounds an element count up so the next slice starts on a 64-byte boundary.
template <typename T>
constexpr int64_t arena_round(int64_t count) {
  constexpr int64_t per_line = static_cast<int64_t>(kArenaAlign / sizeof(T));
  return (count + per_line - 1) / per_line * per_line;
}

// A typed arena of `size` elements of T; movable, not copyable.
template <typename T>
class Arena {
 public:
  Arena() = default;
  explicit Arena(int64_t size) : size_(size) {
    RFA_ASSERT(size >= 0, "arena size {}", size);
    size_t bytes = (static_cast<size_t>(size) * sizeof(T) + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
    if (bytes == 0) bytes = kArenaAlign;
    void* p = std::aligned_alloc(kArenaAlign, bytes);
    if (!p) fail("cannot allocate {:.1f} MiB for an arena; reduce the model or batch size", bytes / 1048576.0);
    std::memset(p, 0, bytes);
    data_.reset(static_cast<T*>(p));
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

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
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
