#pragma once
// CPU time of the whole process (all threads), for benchmarks on a shared
// machine: unlike wall time it does not count the time other processes held
// the cores. Wall time (core/timer.h) stays the number users see.
#include <time.h>

namespace rfa {

inline double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

}  // namespace rfa
