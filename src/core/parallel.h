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

// Runs body(thread_index, thread_count) once per thread; for per-thread scratch.
template <typename Body>
inline void parallel_region(Body&& body) {
#pragma omp parallel
  body(omp_get_thread_num(), omp_get_num_threads());
}

inline int thread_count() { return omp_get_max_threads(); }
void thread_count_set(int n);  // n <= 0: physical cores
int physical_core_count();

}  // namespace rfa
