#include "cli/bench_machine.h"

#include "core/log.h"
#include "core/parallel.h"
#include "kernels/peak_probes.h"

namespace rfa {

void bench_log_core_distance() {
  if (thread_count() < 2) return;
  log_info("bench", "threads 0 and 1 are {:.0f} ns apart (a cache line handed over one way; 20-60 on one die, "
           "100-250 across dies or a VM's distant cores: compare only runs at the same distance)",
           core_to_core_ns());
}

}  // namespace rfa
