#include "core/memory_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <sys/resource.h>

#include "core/cgroup.h"
#include "core/error.h"
#include "core/log.h"

namespace rfa {

double MemoryEstimate::total() const {
  double sum = 0;
  for (const MemoryPart& p : parts) sum += p.bytes;
  return sum;
}

void MemoryEstimate::add(std::string name, double bytes, std::string keys) {
  if (bytes > 0) parts.push_back({std::move(name), bytes, std::move(keys)});
}

void MemoryEstimate::add_copies(std::string name, int copies, std::string keys) {
  if (copies > 0) add(std::move(name), copies * total(), std::move(keys));
}

namespace {

// The "Key: N kB" line of a /proc file in bytes, or -1.
int64_t proc_kib_bytes(const char* path, const char* key) {
  std::FILE* f = std::fopen(path, "r");
  if (!f) return -1;
  char line[256];
  long long kib = -1;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, n) == 0 && line[n] == ':' && std::sscanf(line + n + 1, " %lld kB", &kib) == 1) break;
  std::fclose(f);
  return kib < 0 ? -1 : int64_t(kib) * 1024;
}

}  // namespace

MemoryAvailable memory_available() {
  MemoryAvailable a{static_cast<double>(proc_kib_bytes("/proc/meminfo", "MemAvailable")),
                    "MemAvailable in /proc/meminfo"};
  auto tighter = [&](double bytes, std::string source) {
    if (bytes >= 0 && (a.bytes < 0 || bytes < a.bytes)) a = {bytes, std::move(source)};
  };
  const CgroupMemory group = cgroup_memory(kernel_file_text("/proc/self/cgroup"), "/sys/fs/cgroup");
  if (group.available >= 0)
    tighter(double(group.available), fmt::format("the memory cgroup's limit, {} with {} in use, of a container or a "
                                                 "batch job",
                                                 bytes_text(double(group.limit)), bytes_text(double(group.usage))));
  // A batch system's `ulimit -v` (address space) or `-d` (data): what is left below them.
  const struct {
    int resource;
    const char *status_key, *what;
  } limits[] = {{RLIMIT_AS, "VmSize", "address space (ulimit -v)"}, {RLIMIT_DATA, "VmData", "data (ulimit -d)"}};
  for (const auto& l : limits) {
    rlimit r{};
    if (getrlimit(l.resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) continue;
    const int64_t used = proc_kib_bytes("/proc/self/status", l.status_key);
    if (used < 0) continue;
    tighter(std::max(0.0, double(r.rlim_cur) - double(used)),
            fmt::format("the process's limit on {}, {} with {} mapped", l.what, bytes_text(double(r.rlim_cur)),
                        bytes_text(double(used))));
  }
  return a;
}

int64_t memory_available_bytes() { return static_cast<int64_t>(memory_available().bytes); }

std::string bytes_text(double bytes) {
  if (bytes < 1024) return fmt::format("{:.0f} B", bytes);
  if (bytes < 0x1p20) return fmt::format("{:.1f} KiB", bytes / 0x1p10);
  if (bytes < 0x1p30) return fmt::format("{:.1f} MiB", bytes / 0x1p20);
  if (bytes < 0x1p40) return fmt::format("{:.2f} GiB", bytes / 0x1p30);
  if (bytes < 0x1p50) return fmt::format("{:.2f} TiB", bytes / 0x1p40);
  return fmt::format("{:.2f} PiB", bytes / 0x1p50);
}

void memory_check(const MemoryEstimate& estimate, const std::string& what, double available,
                  const std::string& source) {
  if (available < 0 || estimate.total() <= available) return;
  std::vector<MemoryPart> parts = estimate.parts;
  std::stable_sort(parts.begin(), parts.end(), [](const MemoryPart& a, const MemoryPart& b) { return a.bytes > b.bytes; });
  std::string list;
  for (const MemoryPart& p : parts) list += fmt::format("{}{} {}", list.empty() ? "" : ", ", p.name, bytes_text(p.bytes));
  fail("not enough memory: {} needs about {} ({}), but {} is available ({}); the largest part is {}: shrink {}",
       what, bytes_text(estimate.total()), list, bytes_text(available), source, parts.front().name,
       parts.front().keys);
}

void memory_require(const MemoryEstimate& estimate, const std::string& what) {
  const MemoryAvailable available = memory_available();
  log_debug("memory", "{}: about {} of {} available ({})", what, bytes_text(estimate.total()),
            available.bytes < 0 ? "unknown" : bytes_text(available.bytes), available.source);
  memory_check(estimate, what, available.bytes, available.source);
}

}  // namespace rfa
