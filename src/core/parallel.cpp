#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "core/cpu_cores.h"

namespace rfa {
namespace {

// Written by parallel_fork_calibrate (the main thread at start-up, a server's scheduler when
// it starts), read by every kernel that decides whether to fork.
std::atomic<double> fork_factor{1.0};
std::atomic<double> fork_seconds{0.0};

}  // namespace

int physical_core_count() { return cpu_cores().machine; }

double parallel_fork_seconds_measure() {
  constexpr int kWarm = 2, kRegions = 15;
  double least = 0;
  std::atomic<int> sink{0};
  for (int r = 0; r < kWarm + kRegions; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel
    sink.fetch_add(1, std::memory_order_relaxed);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r == kWarm || (r > kWarm && s < least)) least = s;
  }
  return least;
}

double parallel_fork_seconds() { return fork_seconds.load(std::memory_order_relaxed); }

double parallel_fork_factor() { return fork_factor.load(std::memory_order_relaxed); }

void parallel_fork_factor_set(double factor) { fork_factor.store(std::max(factor, 0.0), std::memory_order_relaxed); }

int64_t parallel_min_work() {
  return static_cast<int64_t>(static_cast<double>(kParallelMinWork) * parallel_fork_factor());
}

void thread_count_set(int n) { omp_set_num_threads(n > 0 ? n : cpu_cores().usable); }

void parallel_fork_calibrate() {
  if (omp_in_parallel()) return;
  if (omp_get_max_threads() < 2) {
    fork_factor.store(1.0, std::memory_order_relaxed);
    return;
  }
  // Up to twice the reference counts as the reference: spinning workers measure 3.4-5.9 µs
  // here from run to run, and the kernels' choices should not move with that. Capped: a
  // measurement taken while the machine was briefly busier must not keep a large job on one
  // core (64x: 256 µs a fork and join).
  const double seconds = parallel_fork_seconds_measure(), factor = seconds / kParallelForkReference;
  fork_seconds.store(seconds, std::memory_order_relaxed);
  fork_factor.store(factor < 2.0 ? 1.0 : std::min(factor, 64.0), std::memory_order_relaxed);
}

void parallel_pool_release() {
  // OpenMP 5.0: a soft pause of the host releases the calling thread's pool (libgomp:
  // gomp_pause_host). A runtime that refuses (non-zero) keeps the pool: slower, not wrong.
  if (omp_pause_resource_all(omp_pause_soft) != 0) return;
}

}  // namespace rfa
