#pragma once
// The limits a control group puts on this process: a container (`docker --cpus 2 -m 4g`), a batch
// system's job (Slurm's cgroup) or a systemd unit. /proc/cpuinfo and /proc/meminfo describe the
// whole machine, so the default thread count (core/cpu_cores.h) and the memory check
// (core/memory_check.h) also read these. Every group from the hierarchy's root down to the
// process's may set a limit; the tightest binds. Both cgroup versions: v2's one hierarchy (the
// /proc/self/cgroup line "0::/path") and v1's controller hierarchies ("N:cpu,cpuacct:/path",
// each mounted at root/<its controllers>).
#include <cstdint>
#include <string>

namespace rfa {

// The whole text of a /proc or /sys file, "" if it cannot be read (a limit's file that is not there
// is no limit). io/file_io.h's readers take the size from stat, which is 0 for these, and throw.
std::string kernel_file_text(const std::string& path);

// The CPU quota in whole CPUs, rounded up (0: none). v2: cpu.max "QUOTA PERIOD" ("max": none);
// v1: cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us.
int cgroup_cpu_quota(const std::string& proc_self_cgroup, const std::string& root);

struct CgroupMemory {
  int64_t available = -1;  // bytes the tightest group can still give: limit - usage + its file cache; -1 none
  int64_t limit = -1;      // that group's limit
  int64_t usage = 0;       // and what it holds now (its reclaimable file cache included)
};
// v2: memory.max ("max": none), memory.current, memory.stat's active_file + inactive_file; v1:
// memory.limit_in_bytes (2^62 or more: none), memory.usage_in_bytes, memory.stat's
// total_active_file + total_inactive_file (or the group's own).
CgroupMemory cgroup_memory(const std::string& proc_self_cgroup, const std::string& root);

}  // namespace rfa
