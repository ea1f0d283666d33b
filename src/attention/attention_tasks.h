#pragma once
// Runs one task per (batch row, head) across the thread pool and hands each task
// the per-thread slice of a caller-provided workspace. Static, in contiguous blocks
// of tasks: a thread reuses its slice (kept hot in cache) for all of its tasks, and
// takes whole batch rows one head after another, so the (B, T, C) rows it reads are
// the ones the row-partitioned kernels before it left in its own cache (round-robin
// gave each thread every row's alternate heads: half its reads came from the other
// core's cache).
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
    const int64_t first = n_tasks * thread / threads, last = n_tasks * (thread + 1) / threads;
    for (int64_t task = first; task < last; ++task) body(task, scratch);
  });
}

}  // namespace rfa
