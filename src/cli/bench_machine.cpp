#include "cli/bench_machine.h"

#include "core/cpu_cores.h"
#include "core/log.h"
#include "core/parallel.h"
#include "kernels/peak_probes.h"

namespace rfa {

void bench_log_core_distance() {
  if (thread_count() < 2) return;
  // The probe's two threads spin on one cache line: sharing a CPU, each hand-over waits for the
  // scheduler (4 ms: the probe would take minutes).
  if (cpu_cores().oversubscribed(thread_count())) {
    log_info("bench", "{} threads share fewer CPUs: the distance between threads 0 and 1 is not measured",
             thread_count());
    return;
  }
  log_info("bench", "threads 0 and 1 are {:.0f} ns apart (a cache line handed over one way; 20-60 on one die, "
           "100-250 across dies or a VM's distant cores: compare only runs at the same distance)",
           core_to_core_ns());
}

}  // namespace rfa
