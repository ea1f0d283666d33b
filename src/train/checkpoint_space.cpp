#include "train/checkpoint_space.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/log.h"
#include "core/memory_check.h"

namespace rfa {
namespace {

double directory_bytes(const std::filesystem::path& dir) {
  std::error_code ec;
  double bytes = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto size = it->file_size(size_ec);
      if (!size_ec) bytes += double(size);
    }
  }
  return bytes;
}

}  // namespace

double CheckpointSpace::needed() const { return std::max(each, slots * each - existing); }

CheckpointSpace checkpoint_space(int64_t params, int64_t tokenizer_bytes, const CheckpointConfig& c,
                                 double existing, double free) {
  CheckpointSpace s;
  // model.safetensors (fp32 weights) and optimizer.safetensors (m and v), the tokenizer's copy, and
  // config.yaml, state.json and the files' headers within 16 KiB (measured: 7-8 KB).
  s.each = 3.0 * 4.0 * double(params) + double(tokenizer_bytes) + 16384.0;
  s.slots = std::max(c.keep_last, 1) + (c.keep_best ? 1 : 0) + 1;
  s.existing = existing;
  s.free = free;
  return s;
}

void checkpoint_space_warn(const std::string& run_dir, int64_t params, int64_t tokenizer_bytes,
                           const CheckpointConfig& c) {
  struct statvfs fs {};
  const double free = statvfs(run_dir.c_str(), &fs) == 0 ? double(fs.f_bavail) * double(fs.f_frsize) : -1;
  const CheckpointSpace s =
      checkpoint_space(params, tokenizer_bytes, c, directory_bytes(std::filesystem::path(run_dir) / "checkpoints"), free);
  if (!s.short_of_room()) return;
  log_warn("train",
           "{}'s file system has {} free, but this run's checkpoints need about {} more ({} at once of {} each: "
           "checkpoint.keep_last {}{}, and the next one written before the oldest goes{}); the run stops at the "
           "first checkpoint that does not fit (the previous one stays intact, the steps since are lost): free "
           "space there, or lower checkpoint.keep_last{}",
           run_dir, bytes_text(s.free), bytes_text(s.needed()), s.slots, bytes_text(s.each), c.keep_last,
           c.keep_best ? ", the best" : "",
           s.existing > 0 ? fmt::format(", less the {} of the checkpoints already there", bytes_text(s.existing)) : "",
           c.keep_best ? " or set checkpoint.keep_best false" : "");
}

}  // namespace rfa
