// memory_available: a limit on the process's address space (ulimit -v) narrows what it reports,
// and names itself as the source. (The estimates and the message: tests/model/memory_estimate_test.cpp;
// the cgroup's limit: tests/core/cgroup_test.cpp.)
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <string>

#include "core/memory_check.h"
#include "support/skip.h"

using namespace rfa;

TEST_CASE("memory_available: ulimit -v leaves the limit less what is mapped") {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer maps its shadow memory as it goes: an address-space limit would stop it.
  if (test::skip_if(true, "an address-space limit under AddressSanitizer")) return;
#endif
  rlimit old{};
  REQUIRE(getrlimit(RLIMIT_AS, &old) == 0);
  const MemoryAvailable probe = memory_available();
  REQUIRE(probe.bytes > 0);
  // 256 MiB above what is mapped now (this process's VmSize), restored before any check can fail.
  rlimit tight = old;
  std::FILE* f = std::fopen("/proc/self/status", "r");
  REQUIRE(f != nullptr);
  char line[256];
  long long vm_kib = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmSize: %lld kB", &vm_kib) == 1) break;
  std::fclose(f);
  REQUIRE(vm_kib > 0);
  tight.rlim_cur = static_cast<rlim_t>(vm_kib * 1024 + (int64_t(256) << 20));
  REQUIRE(setrlimit(RLIMIT_AS, &tight) == 0);
  rlimit now{};
  REQUIRE(getrlimit(RLIMIT_AS, &now) == 0);
  const MemoryAvailable limited = memory_available();
  REQUIRE(setrlimit(RLIMIT_AS, &old) == 0);
  // qemu-user (the arm64 tests, scripts/cross-build-arm64.sh) accepts the call and keeps the host's
  // limit: the guest's address space is its own. Nothing was limited, so there is nothing to see.
  if (test::skip_if(now.rlim_cur != tight.rlim_cur, "an address-space limit that does not hold (qemu-user)")) return;
  CHECK(limited.bytes <= double(int64_t(256) << 20));
  CHECK(limited.bytes > double(int64_t(200) << 20));  // (a few pages may have been mapped in between)
  CHECK(limited.source.find("the process's limit on address space (ulimit -v)") != std::string::npos);
  CHECK(memory_available().source == probe.source);  // restored: no longer that limit
}
