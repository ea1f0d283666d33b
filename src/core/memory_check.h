#pragma once
// Refusing work that cannot fit in memory before allocating any of it. A
// command estimates what it will allocate, part by part, in doubles (no
// overflow whatever the sizes), and checks the total against the memory the
// kernel says is available (MemAvailable in /proc/meminfo, or less where a memory
// cgroup's limit leaves less: core/cgroup.h): allocating first would grind through
// swap or die by the OOM killer.
#include <cstdint>
#include <string>
#include <vector>

namespace rfa {

struct MemoryPart {
  std::string name;  // "AdamW m and v"
  double bytes = 0;
  std::string keys;  // what shrinks it, with current values: "model.n_layers (4), model.d_model (128)"
};

struct MemoryEstimate {
  std::vector<MemoryPart> parts;
  double total() const;
  void add(std::string name, double bytes, std::string keys);
  // `copies` more of everything added so far, as one part: other processes on the machine that
  // allocate the same (mpirun's ranks on one machine). Nothing when copies <= 0.
  void add_copies(std::string name, int copies, std::string keys);
};

struct MemoryAvailable {
  double bytes = -1;   // -1: unknown
  std::string source;  // where the figure comes from, for a message
};
// What the kernel could give us now without swapping or killing us: MemAvailable, or what the
// tightest memory cgroup's limit or the process's address-space or data limit (ulimit -v, -d)
// leaves, if that is less.
MemoryAvailable memory_available();
int64_t memory_available_bytes();  // memory_available().bytes
// "512 B", "3.2 KiB", "11.30 GiB", "1.41 PiB"
std::string bytes_text(double bytes);

// Throws Error when estimate.total() > available: the estimate part by part,
// the available memory, and the keys of the largest part. `what`: "training
// this model". No check when available < 0 (unknown). `source` says where `available` came from.
void memory_check(const MemoryEstimate& estimate, const std::string& what, double available,
                  const std::string& source = "MemAvailable in /proc/meminfo");
// memory_check against memory_available().
void memory_require(const MemoryEstimate& estimate, const std::string& what);

}  // namespace rfa
