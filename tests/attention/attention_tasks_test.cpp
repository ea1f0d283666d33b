// The (batch row, head) task runner (attention/attention_tasks.h): every task runs exactly once,
// each thread takes one contiguous block of tasks in order (whole batch rows, head after head:
// the locality the kernels rely on), and each task gets its own thread's zeroed scratch slice,
// for task counts below, at and above the thread count.
#include <doctest/doctest.h>

#include <omp.h>

#include <algorithm>
#include <vector>

#include "attention/attention_tasks.h"
#include "core/parallel.h"

using namespace rfa;

TEST_CASE("attention tasks: each task once, a contiguous ascending block per thread, its own zeroed scratch") {
  const int before = thread_count();
  for (int threads : {1, 2, 3}) {
    thread_count_set(threads);
    for (int64_t n_tasks : {0, 1, 2, 5, 48, 97}) {
      CAPTURE(threads);
      CAPTURE(n_tasks);
      constexpr size_t kPerThread = 8;
      std::vector<float> workspace(kPerThread * size_t(threads), 7.0f);  // not zero: the runner zeroes
      std::vector<int> runs(size_t(n_tasks), 0), owner(size_t(n_tasks), -1);
      std::vector<std::vector<int64_t>> order(static_cast<size_t>(threads));
      std::vector<int> scratch_ok(size_t(n_tasks), 0);
      attention_tasks_run(n_tasks, workspace.data(), kPerThread, threads, [&](int64_t task, float* scratch) {
        const int t = omp_get_thread_num();
        ++runs[size_t(task)];
        owner[size_t(task)] = t;
        order[size_t(t)].push_back(task);
        bool ok = scratch == workspace.data() + size_t(t) * kPerThread;
        for (size_t i = 0; i < kPerThread && ok; ++i) ok = scratch[i] == 0.0f;
        scratch_ok[size_t(task)] = ok;
      });
      for (int64_t task = 0; task < n_tasks; ++task) {
        CAPTURE(task);
        CHECK(runs[size_t(task)] == 1);
        CHECK(scratch_ok[size_t(task)] == 1);
      }
      // Contiguous and ascending per thread; blocks in thread order, so owners never decrease.
      for (const std::vector<int64_t>& tasks : order)
        for (size_t i = 1; i < tasks.size(); ++i) CHECK(tasks[i] == tasks[i - 1] + 1);
      for (int64_t task = 1; task < n_tasks; ++task) CHECK(owner[size_t(task)] >= owner[size_t(task - 1)]);
      // Balanced: block sizes differ by at most one.
      size_t least = size_t(n_tasks), most = 0;
      for (const std::vector<int64_t>& tasks : order) {
        least = std::min(least, tasks.size());
        most = std::max(most, tasks.size());
      }
      if (omp_get_max_threads() == threads) CHECK(most - least <= 1);
    }
  }
  thread_count_set(before);
}
