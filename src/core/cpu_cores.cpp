#include "core/cpu_cores.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "core/number_parse.h"

namespace rfa {
namespace {

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

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

int cgroup_cpu_quota(const std::string& proc_self_cgroup, const std::string& root) {
  // Every group from the hierarchy's root down to the process's may limit it; the smallest
  // quota / period binds. cgroup v2: the line "0::/path", each group's cpu.max "QUOTA PERIOD"
  // ("max PERIOD": none). v1: a line "N:...,cpu,...:/path", the cpu controller's
  // cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us.
  double tightest = 0;
  auto limit = [&](double quota, double period) {
    if (quota <= 0 || period <= 0) return;
    const double cpus = quota / period;
    if (tightest == 0 || cpus < tightest) tightest = cpus;
  };
  auto number = [](const std::string& text) {  // the first word (the files end in a newline); 0 if none
    std::istringstream in(text);
    std::string word;
    double v = 0;
    return in >> word && parse_number(word, &v) ? v : 0.0;
  };
  auto walk = [](const std::filesystem::path& top, const std::string& path, auto&& read) {
    std::filesystem::path group = top;
    read(group);
    std::istringstream parts(path);
    std::string part;
    while (std::getline(parts, part, '/'))
      if (!part.empty()) read(group /= part);
  };
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos || b + 1 >= line.size() || line[b + 1] != '/') continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {
      walk(root, path, [&](const std::filesystem::path& dir) {
        std::istringstream in(file_text((dir / "cpu.max").string()));
        std::string quota, period;
        if (in >> quota >> period && quota != "max") limit(number(quota), number(period));
      });
      continue;
    }
    std::istringstream names(controllers);
    std::string name;
    bool cpu = false;
    while (std::getline(names, name, ',')) cpu = cpu || name == "cpu";
    if (!cpu) continue;
    for (const std::string& mount : {controllers, std::string("cpu,cpuacct"), std::string("cpu")}) {
      const std::filesystem::path top = std::filesystem::path(root) / mount;
      std::error_code ec;
      if (!std::filesystem::is_directory(top, ec)) continue;
      walk(top, path, [&](const std::filesystem::path& dir) {
        limit(number(file_text((dir / "cpu.cfs_quota_us").string())),
              number(file_text((dir / "cpu.cfs_period_us").string())));
      });
      break;
    }
  }
  return tightest > 0 ? std::max(1, static_cast<int>(std::ceil(tightest - 1e-9))) : 0;
}

const CpuCores& cpu_cores() {
  static const CpuCores cores = cpu_cores_from(file_text("/proc/cpuinfo"), affinity_cpus(),
                                               cgroup_cpu_quota(file_text("/proc/self/cgroup"), "/sys/fs/cgroup"));
  return cores;
}

}  // namespace rfa
