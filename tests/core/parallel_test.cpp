// parallel_pool_release: the calling thread's OpenMP workers end, and a later region starts
// new ones and still computes the same. The fork factor: measured by parallel_fork_calibrate,
// and what it scales (parallel_min_work) and does not (parallel_grain).
#include <doctest/doctest.h>

#include <dirent.h>

#include <chrono>
#include <thread>
#include <vector>

#include "core/parallel.h"
#include "support/fork_factor.h"

using namespace rfa;

namespace {

int thread_count_now() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

int64_t sum_squares(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  parallel_for(n, [&](int64_t i) { v[size_t(i)] = i * i; });
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

}  // namespace

TEST_CASE("parallel_pool_release: the calling thread's workers exit; the next region works") {
  parallel_pool_release();  // whatever an earlier test left
  const int base = thread_count_now();
  int in_region = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp atomic
    ++in_region;
  }
  REQUIRE(in_region == 2);
  const int with_pool = thread_count_now();
  CHECK(with_pool == base + 1);  // the region's second thread stays, docked, for the next one
  parallel_pool_release();
  int after = thread_count_now();
  for (int i = 0; i < 100 && after >= with_pool; ++i) {  // the worker ends on its own time
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    after = thread_count_now();
  }
  CHECK(after == base);
  CHECK(sum_squares(1000) == 332833500);
}

TEST_CASE("parallel fork factor: measured by parallel_fork_calibrate, at least 1 and capped; it scales parallel_min_work, not the grain") {
  const double seconds = parallel_fork_seconds_measure();
  CHECK(seconds > 0);
  CHECK(seconds < 0.1);  // an empty region; a tenth of a second would mean the measurement is broken
  {
    test::ForkFactorScope pool(2, 1.0);
    parallel_fork_calibrate();  // this pool's (the suite runs under OMP_WAIT_POLICY=passive: about 5x here)
    CHECK(parallel_fork_seconds() > 0);
    CHECK(parallel_fork_factor() >= 1.0);
    CHECK(parallel_fork_factor() <= 64.0);
    CHECK(parallel_min_work() >= kParallelMinWork);
  }
  {
    test::ForkFactorScope one(1, 7.0);
    parallel_fork_calibrate();  // one thread: nothing to fork, the reference
    CHECK(parallel_fork_factor() == 1.0);
  }
  test::ForkFactorScope pool(2, 1.0);
  CHECK(parallel_min_work() == kParallelMinWork);
  parallel_fork_factor_set(6.0);  // OMP_WAIT_POLICY=passive on the reference VM
  CHECK(parallel_min_work() == 6 * kParallelMinWork);
  CHECK(parallel_grain(1024) == kParallelMinWork / 1024);  // the grain keeps the reference
  parallel_fork_factor_set(0.0);  // every job under parallel_min_work forks
  CHECK(parallel_min_work() == 0);
  CHECK(parallel_grain(1024) == kParallelMinWork / 1024);
  parallel_fork_factor_set(-1.0);  // clamped
  CHECK(parallel_fork_factor() == 0.0);
}
