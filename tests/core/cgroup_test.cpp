// cgroup_cpu_quota and cgroup_memory: the limits of the process's control groups, from cgroup v2
// and v1 files laid out in a directory as /sys/fs/cgroup lays them out.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "core/cgroup.h"
#include "support/temp_dir.h"

using namespace rfa;

TEST_CASE("cgroup_cpu_quota: the tightest cpu.max (v2) or cfs quota (v1) from the root to the process's group") {
  const test::TempDir root;
  namespace fs = std::filesystem;
  fs::create_directories(root.path() + "/a/b");
  root.write("cpu.max", "max 100000\n");
  root.write("a/cpu.max", "300000 100000\n");
  root.write("a/b/cpu.max", "150000 100000\n");  // 1.5 CPUs: 2 threads
  CHECK(cgroup_cpu_quota("0::/a/b\n", root.path()) == 2);
  CHECK(cgroup_cpu_quota("0::/a\n", root.path()) == 3);
  CHECK(cgroup_cpu_quota("0::/\n", root.path()) == 0);          // "max": no quota
  CHECK(cgroup_cpu_quota("0::/elsewhere\n", root.path()) == 0);  // no files: no quota
  CHECK(cgroup_cpu_quota("", root.path()) == 0);
  root.write("a/b/cpu.max", "20000 100000\n");  // a fifth of a CPU: still 1 thread
  CHECK(cgroup_cpu_quota("0::/a/b\n", root.path()) == 1);

  // v1 (a hybrid hierarchy: the cpu controller mounted beside the others).
  fs::create_directories(root.path() + "/cpu,cpuacct/docker/x");
  root.write("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  root.write("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  root.write("cpu,cpuacct/docker/x/cpu.cfs_quota_us", "400000\n");
  root.write("cpu,cpuacct/docker/x/cpu.cfs_period_us", "100000\n");
  const std::string v1 = "12:memory:/docker/x\n4:cpu,cpuacct:/docker/x\n0::/\n";
  CHECK(cgroup_cpu_quota(v1, root.path()) == 4);
  root.write("cpu,cpuacct/docker/x/cpu.cfs_quota_us", "-1\n");
  CHECK(cgroup_cpu_quota(v1, root.path()) == 0);
}

TEST_CASE("cgroup_memory: the tightest limit less what its group holds beyond its file cache") {
  const test::TempDir root;
  namespace fs = std::filesystem;
  constexpr int64_t MiB = int64_t(1) << 20;
  fs::create_directories(root.path() + "/a/b");
  root.write("memory.max", "max\n");
  root.write("a/memory.max", std::to_string(1024 * MiB) + "\n");
  root.write("a/memory.current", std::to_string(100 * MiB) + "\n");
  root.write("a/memory.stat", "anon 4096\nfile 60000000\nactive_file " + std::to_string(20 * MiB) +
                                 "\ninactive_file " + std::to_string(30 * MiB) + "\n");
  root.write("a/b/memory.max", "max\n");
  CgroupMemory m = cgroup_memory("0::/a/b\n", root.path());
  CHECK(m.available == 974 * MiB);  // 1024 - (100 - 20 - 30 of file cache, reclaimable)
  CHECK(m.limit == 1024 * MiB);
  CHECK(m.usage == 100 * MiB);
  root.write("a/b/memory.max", std::to_string(512 * MiB) + "\n");  // a tighter child
  root.write("a/b/memory.current", std::to_string(10 * MiB) + "\n");
  CHECK(cgroup_memory("0::/a/b\n", root.path()).available == 502 * MiB);
  root.write("a/b/memory.current", std::to_string(600 * MiB) + "\n");  // over its limit for a moment
  CHECK(cgroup_memory("0::/a/b\n", root.path()).available == 0);
  CHECK(cgroup_memory("0::/\n", root.path()).available == -1);  // "max": no limit
  CHECK(cgroup_memory("", root.path()).available == -1);

  // v1: the memory controller's own hierarchy; its root's "unlimited" is 2^63 rounded to a page.
  fs::create_directories(root.path() + "/memory/docker/x");
  root.write("memory/memory.limit_in_bytes", "9223372036854771712\n");
  root.write("memory/docker/x/memory.limit_in_bytes", std::to_string(300 * MiB) + "\n");
  root.write("memory/docker/x/memory.usage_in_bytes", std::to_string(40 * MiB) + "\n");
  root.write("memory/docker/x/memory.stat", "cache 1000\nactive_file 1000\ntotal_active_file " +
                                                std::to_string(5 * MiB) + "\ntotal_inactive_file " +
                                                std::to_string(15 * MiB) + "\n");
  const std::string v1 = "5:cpu,cpuacct:/docker/x\n4:memory:/docker/x\n0::/\n";
  m = cgroup_memory(v1, root.path());
  CHECK(m.available == 280 * MiB);
  CHECK(m.limit == 300 * MiB);
  root.write("memory/docker/x/memory.limit_in_bytes", "9223372036854771712\n");
  CHECK(cgroup_memory(v1, root.path()).available == -1);
}
