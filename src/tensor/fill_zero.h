#pragma once
// Zeroing large buffers (gradient scratch, zero-grad) across the thread pool:
// one thread's memset does not saturate memory bandwidth. Small buffers are
// zeroed inline, where a parallel region would cost more than it saves.
#include <cstdint>
#include <cstring>

#include "core/parallel.h"

namespace rfa {

template <typename T>
void fill_zero(T* x, int64_t n) {
  constexpr int64_t kBlock = 64 * 1024;  // elements per task (256 KiB of float)
  if (n <= 2 * kBlock) {
    std::memset(x, 0, sizeof(T) * static_cast<size_t>(n));
    return;
  }
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  parallel_for(blocks, [&](int64_t b) {
    const int64_t begin = b * kBlock, count = begin + kBlock <= n ? kBlock : n - begin;
    std::memset(x + begin, 0, sizeof(T) * static_cast<size_t>(count));
  });
}

}  // namespace rfa
