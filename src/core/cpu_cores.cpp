#include "core/cpu_cores.h"

#include <sched.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "core/cgroup.h"

namespace rfa {
namespace {

// The integer after "key" and its colon on a /proc/cpuinfo line, or -1.
int cpuinfo_value(const std::string& line, const char* key) {
  if (line.rfind(key, 0) != 0) return -1;
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return -1;
  std::istringstream in(line.substr(colon + 1));
  int value = -1;
  in >> value;
  return in ? value : -1;
}

// The CPUs sched_getaffinity allows (empty if it fails), with a mask as large as the kernel's.
std::vector<int> affinity_cpus() {
  for (int size = 1024; size <= (1 << 16); size *= 4) {
    cpu_set_t* set = CPU_ALLOC(size);
    if (!set) return {};
    const size_t bytes = CPU_ALLOC_SIZE(size);
    CPU_ZERO_S(bytes, set);
    if (sched_getaffinity(0, bytes, set) == 0) {
      std::vector<int> cpus;
      for (int c = 0; c < size; ++c)
        if (CPU_ISSET_S(c, bytes, set)) cpus.push_back(c);
      CPU_FREE(set);
      return cpus;
    }
    CPU_FREE(set);  // EINVAL: the kernel's mask is larger
  }
  return {};
}

}  // namespace

CpuCores cpu_cores_from(const std::string& cpuinfo, const std::vector<int>& affinity, int quota) {
  // processor -> (physical id, core id); a block without core id (arm64) is its own core.
  std::map<int, std::pair<int, int>> core_of;
  std::istringstream lines(cpuinfo);
  std::string line;
  int processor = -1, physical = 0;
  while (std::getline(lines, line)) {
    if (const int v = cpuinfo_value(line, "processor"); v >= 0) {
      processor = v;
      physical = 0;
      core_of[processor] = {-1, processor};
    } else if (const int p = cpuinfo_value(line, "physical id"); p >= 0) {
      physical = p;
    } else if (const int c = cpuinfo_value(line, "core id"); c >= 0 && processor >= 0) {
      core_of[processor] = {physical, c};
    }
  }
  CpuCores cores;
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  cores.online = core_of.empty() ? std::max(1, hardware) : static_cast<int>(core_of.size());
  std::set<std::pair<int, int>> all, usable;
  for (const auto& [cpu, core] : core_of) all.insert(core);
  int cpus = 0;
  for (int cpu : affinity) {
    const auto it = core_of.find(cpu);
    if (it != core_of.end()) usable.insert(it->second);
    cpus += it != core_of.end() || core_of.empty();
  }
  cores.machine = all.empty() ? cores.online : static_cast<int>(all.size());
  cores.cpus = affinity.empty() || cpus == 0 ? cores.online : cpus;
  cores.usable = affinity.empty() || usable.empty() ? (core_of.empty() ? cores.cpus : cores.machine)
                                                    : static_cast<int>(usable.size());
  cores.quota = quota > 0 ? quota : 0;
  if (cores.quota > 0) cores.usable = std::min(cores.usable, cores.quota);
  cores.usable = std::max(1, cores.usable);
  return cores;
}

const CpuCores& cpu_cores() {
  static const CpuCores cores =
      cpu_cores_from(kernel_file_text("/proc/cpuinfo"), affinity_cpus(),
                     cgroup_cpu_quota(kernel_file_text("/proc/self/cgroup"), "/sys/fs/cgroup"));
  return cores;
}

}  // namespace rfa
