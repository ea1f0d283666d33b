#pragma once
// The only place that knows OpenMP. Kernels call parallel_for; never call gemm
// from inside the body (oneDNN runs on the same OpenMP runtime).
#include <omp.h>

#include <cstdint>

namespace rfa {

// Runs body(i) for i in [0, n) across the thread pool, static schedule.
template <typename Body>
inline void parallel_for(int64_t n, Body&& body) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) body(i);
}

// Work (multiply-adds) below which a job runs on the calling thread: waking the
// pool costs about as much (a decode step of one sequence), and far more on a
// busy machine where another thread may not be running. Set for a pool whose fork
// and join cost kParallelForkReference: OpenMP's default wait policy, where the
// workers spin between regions (3.4-5.9 µs on a 2-vCPU Zen 5 VM, 2026-12-04).
inline constexpr int64_t kParallelMinWork = int64_t(1) << 18;
inline constexpr double kParallelForkReference = 4e-6;  // seconds

// The grain for items of `work_per_item` multiply-adds each: the item count
// below which the whole job stays under kParallelMinWork. For jobs whose estimate
// counts their multiply-adds only (a decode step's state pass, bound by the
// state's bytes; SwiGLU's exp) and was tuned against measured steps; it does not
// follow parallel_fork_factor (dear forks under OMP_WAIT_POLICY=passive cost
// about what such jobs' time exceeds their count: 4x128 decode steps of 32-48
// rows ran 20-40% slower with the grain scaled).
inline int64_t parallel_grain(int64_t work_per_item) {
  return work_per_item > 0 ? (kParallelMinWork + work_per_item - 1) / work_per_item : kParallelMinWork;
}

// kParallelMinWork scaled by how much dearer this process's fork and join are than
// the reference (never below it), for jobs whose multiply-adds are their time (the
// decode step's products, its row split): with OMP_WAIT_POLICY=passive the workers
// sleep in the kernel between regions and a fork and join cost 25 µs (87 after a
// millisecond idle) on the same VM, so such a job must be about 6x larger to gain
// from the second core. Set by parallel_fork_calibrate; kParallelMinWork until then.
int64_t parallel_min_work();
// Times the calling thread's pool (parallel_fork_seconds_measure) and sets the scale
// from it: the main thread at start-up and a server's scheduler when it starts (each
// after thread_count_set). Up to twice the reference counts as the reference. Not inside
// a parallel region.
void parallel_fork_calibrate();
// That scale (1 until parallel_fork_calibrate; >= 1 from a measurement).
double parallel_fork_factor();
// Sets it: 0 makes every job under parallel_min_work fork, whatever its size (tests that
// exercise the threaded paths on small problems).
void parallel_fork_factor_set(double factor);
// The fork and join parallel_fork_calibrate last measured, in seconds (0: none yet).
double parallel_fork_seconds();
// The least time of 15 empty parallel regions on the calling thread's pool, after two to
// start its workers: what the wait policy and the platform make a fork and join cost, not
// what a moment's load on the other cores adds (a median taken while another process ran
// would keep a server's jobs on one core long after). Not inside a parallel region.
double parallel_fork_seconds_measure();

// body(i) for i in [0, n): serially on the calling thread when n <= grain (or
// n < 2, or inside a parallel region, where a nested one would have one thread
// anyway), else across the pool as parallel_for. Items must be independent, so
// the results are the same either way.
template <typename Body>
inline void parallel_for(int64_t n, int64_t grain, Body&& body) {
  if (n <= grain || n < 2 || omp_in_parallel()) {
    for (int64_t i = 0; i < n; ++i) body(i);
  } else {
    parallel_for(n, body);
  }
}

// Where part t of `parts` starts in the static partition of n items, [n t / parts, n (t + 1) / parts):
// the row kernels' and the products' split by rows, and the training step's batch split.
inline int64_t partition_begin(int64_t n, int t, int parts) { return n * t / parts; }

// Runs body(thread_index, thread_count) once per thread; for per-thread scratch.
template <typename Body>
inline void parallel_region(Body&& body) {
#pragma omp parallel
  body(omp_get_thread_num(), omp_get_num_threads());
}

// Runs body() on the calling thread with OpenMP's thread count 1 for the code it
// calls (oneDNN reads omp_get_max_threads() per call): the count is set inside a
// one-thread region, whose data environment ends with it, so the caller's count
// is never changed. Must not be called from inside a parallel region.
template <typename Body>
inline void single_threaded(Body&& body) {
#pragma omp parallel num_threads(1)
  {
    omp_set_num_threads(1);
    body();
  }
}

// Runs body(thread_index, thread_count) once per thread, each with OpenMP's thread count 1 for
// the code it calls: for calls into oneDNN that should run serially side by side, one per
// thread (kernels/gemm.cpp splits some products so). Not inside a parallel region.
template <typename Body>
inline void parallel_region_serial_calls(Body&& body) {
#pragma omp parallel
  {
    omp_set_num_threads(1);  // this thread's nested count, ends with the region (as single_threaded)
    body(omp_get_thread_num(), omp_get_num_threads());
  }
}

// Inside parallel_region / parallel_region_serial_calls: every thread of the region waits here
// until all have arrived (and what each wrote before is visible to all after).
inline void parallel_barrier() {
#pragma omp barrier
}

inline int thread_count() { return omp_get_max_threads(); }
// True inside a parallel region (of any team size).
inline bool in_parallel_region() { return omp_in_parallel(); }
void thread_count_set(int n);  // n <= 0: the cores this process may use (core/cpu_cores.h)

// Ends the calling thread's pool of OpenMP workers (they exit; a later parallel region on this
// thread starts new ones). For a thread that hands all parallel work to another thread, as
// `rfa serve` and `rfa chat` hand it to the engine's scheduler: libgomp counts every pool's
// workers, and while they outnumber the cores it spins about 100 times at a barrier before it
// sleeps in the kernel, so the scheduler's regions paid a futex sleep and wake each (50 a
// decode step, a fifth of the server's time on a 2-core VM). Not inside a parallel region.
void parallel_pool_release();
int physical_core_count();  // the machine's (a layout choice must not follow taskset)

}  // namespace rfa
