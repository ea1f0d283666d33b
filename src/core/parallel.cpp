#include "core/parallel.h"

#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

namespace rfa {

int physical_core_count() {
  // Count distinct (physical id, core id) pairs; SMT siblings share a core and
  // slow matrix products down rather than up.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::set<std::pair<int, int>> cores;
  std::string line;
  int physical = 0;
  while (std::getline(cpuinfo, line)) {
    auto value = [&] { return std::stoi(line.substr(line.find(':') + 1)); };
    if (line.rfind("physical id", 0) == 0) physical = value();
    if (line.rfind("core id", 0) == 0) cores.insert({physical, value()});
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

void thread_count_set(int n) { omp_set_num_threads(n > 0 ? n : physical_core_count()); }

void parallel_pool_release() {
  // OpenMP 5.0: a soft pause of the host releases the calling thread's pool (libgomp:
  // gomp_pause_host). A runtime that refuses (non-zero) keeps the pool: slower, not wrong.
  if (omp_pause_resource_all(omp_pause_soft) != 0) return;
}

}  // namespace rfa
