// cpu_cores_from: the cores a process may use, from /proc/cpuinfo's text, an affinity mask and a
// CPU quota (core/cgroup.h).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/cpu_cores.h"

using namespace rfa;

namespace {

// /proc/cpuinfo of an x86 machine: `cores` cores on one package, each with `smt` CPUs, numbered as
// Linux does (CPU c + k cores is the k-th sibling of core c).
std::string x86_cpuinfo(int cores, int smt) {
  std::string text;
  for (int k = 0; k < smt; ++k)
    for (int c = 0; c < cores; ++c)
      text += "processor\t: " + std::to_string(k * cores + c) + "\nvendor_id\t: AuthenticAMD\nphysical id\t: 0\n" +
              "siblings\t: " + std::to_string(cores * smt) + "\ncore id\t\t: " + std::to_string(c) +
              "\ncpu cores\t: " + std::to_string(cores) + "\nflags\t\t: fpu avx2\n\n";
  return text;
}

}  // namespace

TEST_CASE("cpu_cores_from: SMT siblings count once; the affinity mask and the quota narrow the usable cores") {
  const std::string info = x86_cpuinfo(4, 2);  // 4 cores, 8 CPUs
  const CpuCores all = cpu_cores_from(info, {}, 0);
  CHECK(all.machine == 4);
  CHECK(all.online == 8);
  CHECK(all.cpus == 8);
  CHECK(all.usable == 4);
  CHECK_FALSE(all.bound());
  CHECK_FALSE(all.oversubscribed(8));
  CHECK(all.oversubscribed(9));

  const CpuCores every = cpu_cores_from(info, {0, 1, 2, 3, 4, 5, 6, 7}, 0);
  CHECK(every.usable == 4);
  CHECK_FALSE(every.bound());

  const CpuCores one = cpu_cores_from(info, {2}, 0);  // taskset -c 2
  CHECK(one.machine == 4);
  CHECK(one.cpus == 1);
  CHECK(one.usable == 1);
  CHECK(one.bound());
  CHECK(one.oversubscribed(2));
  CHECK_FALSE(one.oversubscribed(1));

  const CpuCores siblings = cpu_cores_from(info, {1, 5}, 0);  // both CPUs of core 1
  CHECK(siblings.cpus == 2);
  CHECK(siblings.usable == 1);
  CHECK_FALSE(siblings.oversubscribed(2));

  const CpuCores two = cpu_cores_from(info, {0, 1, 4}, 0);  // cores 0 and 1, one sibling
  CHECK(two.usable == 2);
  CHECK(two.cpus == 3);

  const CpuCores quota = cpu_cores_from(info, {}, 2);  // docker --cpus 2 (or 1.5, rounded up)
  CHECK(quota.usable == 2);
  CHECK(quota.quota == 2);
  CHECK(quota.oversubscribed(3));
  CHECK_FALSE(quota.oversubscribed(2));
  CHECK(cpu_cores_from(info, {0}, 3).usable == 1);  // the mask, when it is the tighter
}

TEST_CASE("cpu_cores_from: arm64's cpuinfo names no cores (each CPU its own); no cpuinfo at all still gives 1 or more") {
  std::string arm;
  for (int c = 0; c < 4; ++c) arm += "processor\t: " + std::to_string(c) + "\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n\n";
  const CpuCores cores = cpu_cores_from(arm, {1, 3}, 0);
  CHECK(cores.machine == 4);
  CHECK(cores.online == 4);
  CHECK(cores.cpus == 2);
  CHECK(cores.usable == 2);
  CHECK(cpu_cores_from(arm, {}, 0).usable == 4);

  const CpuCores none = cpu_cores_from("", {0, 1, 2}, 0);
  CHECK(none.cpus == 3);
  CHECK(none.usable == 3);
  CHECK(cpu_cores_from("", {}, 0).usable >= 1);
  // Lines that are not what they claim are passed over.
  const CpuCores garbled = cpu_cores_from("processor : x\ncore id : \nphysical id\nprocessor: 1\ncore id: 7 9\n", {}, 0);
  CHECK(garbled.usable == 1);
  CHECK(garbled.machine == 1);
}

TEST_CASE("cpu_cores: this process's counts are consistent") {
  const CpuCores& cores = cpu_cores();
  CHECK(cores.usable >= 1);
  CHECK(cores.usable <= cores.machine);
  CHECK(cores.cpus >= cores.usable);
  CHECK(cores.cpus <= cores.online);
}
