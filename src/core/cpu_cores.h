#pragma once
// How many cores the machine has and how many of them this process may use. The default thread
// count must be the second: a process confined by `taskset`, a container's cpuset or CPU quota
// (`docker --cpus`), a batch system's allocation (Slurm's cgroup) or mpirun's binding that started
// one thread per core of the whole machine would run several threads on each CPU it has, every
// OpenMP barrier then waiting for a thread the kernel has not scheduled.
#include <string>
#include <vector>

namespace rfa {

struct CpuCores {
  int machine = 1;  // physical cores of the machine (SMT siblings once)
  int usable = 1;   // physical cores among the CPUs of the affinity mask, capped by the CPU quota
  int cpus = 1;     // logical CPUs in the affinity mask
  int online = 1;   // logical CPUs of the machine
  int quota = 0;    // the cgroup's CPU quota rounded up (`docker --cpus 1.5`: 2); 0 = none
  // The affinity mask leaves out some of the machine's CPUs: a launcher or the user chose them.
  bool bound() const { return cpus < online; }
  bool quota_binds() const { return quota > 0 && quota < cpus; }
  // The threads this process can run at once: its mask's CPUs, or its quota where that is fewer.
  int runnable() const { return quota_binds() ? quota : cpus; }
  bool oversubscribed(int threads) const { return threads > runnable(); }
};

// This process's, read once (/proc/cpuinfo, sched_getaffinity, core/cgroup.h's CPU quota).
const CpuCores& cpu_cores();

// The parts, for tests. `cpuinfo`: /proc/cpuinfo's text; `affinity`: the CPU numbers the process
// may run on (empty: all of cpuinfo's); `quota`: CpuCores::quota.
CpuCores cpu_cores_from(const std::string& cpuinfo, const std::vector<int>& affinity, int quota);

}  // namespace rfa
