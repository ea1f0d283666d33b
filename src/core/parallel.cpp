#include "core/parallel.h"

#include "core/cpu_cores.h"

namespace rfa {

int physical_core_count() { return cpu_cores().machine; }

void thread_count_set(int n) { omp_set_num_threads(n > 0 ? n : cpu_cores().usable); }

void parallel_pool_release() {
  // OpenMP 5.0: a soft pause of the host releases the calling thread's pool (libgomp:
  // gomp_pause_host). A runtime that refuses (non-zero) keeps the pool: slower, not wrong.
  if (omp_pause_resource_all(omp_pause_soft) != 0) return;
}

}  // namespace rfa
