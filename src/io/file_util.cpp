#include "io/file_util.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/error.h"
#include "io/file_io.h"

namespace rfa {

// A directory made ifstream's size -1, hence std::bad_alloc; a FIFO made it wait forever.
std::string file_read_all(const std::string& path) { return file_read_text(path); }

std::string file_temp_path(const std::string& path) {
  return fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
}

namespace {

// True unless `pid` certainly does not exist (EPERM: it exists, owned by another user).
bool pid_alive(long pid) {
  if (pid == static_cast<long>(::getpid())) return true;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

}  // namespace

std::vector<std::string> file_temp_remove_stale(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string prefix = target.filename().string() + ".tmp.";
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.size() > prefix.size() + 9 || name.compare(0, prefix.size(), prefix) != 0)
      continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits[0] == '0') continue;
    std::error_code e;
    if (!it->is_regular_file(e) || pid_alive(std::stol(digits))) continue;
    if (fs::remove(it->path(), e)) removed.push_back(it->path().string());
  }
  return removed;
}

void file_commit(const std::string& temp, const std::string& path) {
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;  // not ec: its reason is the message ("Success" once remove() reused it)
    std::filesystem::remove(temp, ignored);
    fail("cannot rename {} to {}: {}", temp, path, ec.message());
  }
}

void file_write_atomic(const std::string& path, std::string_view bytes) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) fail("cannot create directory {} for {}: {}", parent.string(), path, ec.message());
  std::string temp = file_temp_path(path);
  try {
    // fsynced before the rename: after a crash the name holds the old bytes or the new, never an empty file.
    file_write_durable(temp, bytes);
  } catch (const Error&) {
    std::filesystem::remove(temp, ec);
    throw;
  }
  file_commit(temp, path);
}

}  // namespace rfa
