#pragma once
// Runs one task per (batch row, head) across the thread pool and hands each task
// the per-thread slice of a caller-provided workspace. Static round-robin, so a
// thread reuses its slice (kept hot in cache) for all of its tasks.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "core/parallel.h"

namespace rfa {

// body(task, scratch) with scratch = per_thread elements owned by this thread alone,
// zeroed once per call (padding columns read by vecmat then hold finite values).
template <typename T, typename Body>
void attention_tasks_run(int64_t n_tasks, T* workspace, size_t per_thread, int max_threads, Body&& body) {
  parallel_region([&](int thread, int threads) {
    RFA_ASSERT(thread < max_threads, "thread {} but workspace sized for {} threads", thread, max_threads);
    T* scratch = workspace + static_cast<size_t>(thread) * per_thread;
    std::fill(scratch, scratch + per_thread, T(0));
    for (int64_t task = thread; task < n_tasks; task += threads) body(task, scratch);
  });
}

// body(b, h, scratch, thread) for every (batch row, head): thread t takes the batch
// rows [t B / threads, (t+1) B / threads), each row's heads in order, so work that
// sums over the heads of one batch row can follow its last head without races.
template <typename T, typename Body>
void attention_rows_run(int B, int H, T* workspace, size_t per_thread, int max_threads, Body&& body) {
  parallel_region([&](int thread, int threads) {
    RFA_ASSERT(thread < max_threads, "thread {} but workspace sized for {} threads", thread, max_threads);
    T* scratch = workspace + static_cast<size_t>(thread) * per_thread;
    std::fill(scratch, scratch + per_thread, T(0));
    const int b_begin = static_cast<int>(int64_t(B) * thread / threads);
    const int b_end = static_cast<int>(int64_t(B) * (thread + 1) / threads);
    for (int b = b_begin; b < b_end; ++b)
      for (int h = 0; h < H; ++h) body(b, h, scratch, thread);
  });
}

}  // namespace rfa
