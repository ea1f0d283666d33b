#include "train/run_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "core/error.h"

namespace rfa {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLockFile = ".lock";
// What a trainer writes in its run directory (train_run.h); a run that failed before its first checkpoint left these and nothing else.
constexpr std::array<std::string_view, 5> kTrainerFiles = {"train.log", "config.yaml", "tokenizer.model",
                                                          "metrics.jsonl", "checkpoints"};

// Creates dir and its missing parents one level at a time; returns the levels this call
// created, deepest first (a level another process creates meanwhile is not ours).
std::vector<std::string> dir_create(const std::string& dir) {
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = fs::absolute(dir).lexically_normal(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  std::vector<std::string> created;
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (fs::create_directory(*it, ec)) created.insert(created.begin(), it->string());
    if (ec)
      fail("cannot create train.run_dir '{}': {} at '{}'; create it or pick another directory with --set "
           "train.run_dir=...",
           dir, ec.message(), it->string());
  }
  if (!fs::is_directory(dir, ec))
    fail("train.run_dir '{}' exists and is not a directory; pick another path with --set train.run_dir=...", dir);
  return created;
}

// The pid written into a held lock file, or "unknown" (the holder may not have written it yet).
std::string lock_holder(int fd) {
  char text[32] = {};
  ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  std::string pid(text, n > 0 ? size_t(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) return "unknown";
  return pid;
}

// Creates, writes one byte to, and removes a file in `dir`: the checkpoint writer's
// first move, tried before any work is done.
void probe_writable(const std::string& dir, const char* what) {
  const std::string probe = fmt::format("{}/.write-probe.{}", dir, ::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    if (::write(fd, "x", 1) != 1) err = errno != 0 ? errno : EIO;
    ::close(fd);
    ::unlink(probe.c_str());
  }
  if (err == ENOSPC || err == EDQUOT)  // not a permission: chmod would not help
    fail("{} '{}' does not accept new files ({}), so no checkpoint could be saved; free space on its file system or "
         "pick another directory with --set train.run_dir=...",
         what, dir, std::strerror(err));
  if (err != 0)
    fail("{} '{}' does not accept new files ({}), so no checkpoint could be saved; make it writable (e.g. chmod u+w "
         "'{}') or pick another directory with --set train.run_dir=...",
         what, dir, std::strerror(err), dir);
}

}  // namespace

RunDirLock::RunDirLock(const std::string& dir) : dir_(dir) {
  created_ = dir_create(dir);
  try {
    const std::string lock = dir + "/" + kLockFile;
    std::error_code ec;
    const bool lock_existed = fs::exists(lock, ec);
    fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      fail("cannot open the lock file '{}': {}; make train.run_dir '{}' writable or pick another directory with "
           "--set train.run_dir=...",
           lock, std::strerror(errno), dir);
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {  // from here on, fd_ >= 0 means the lock is ours
      const int err = errno;
      const std::string holder = lock_holder(fd_);
      ::close(fd_);
      fd_ = -1;
      if (err != EWOULDBLOCK) fail("cannot lock '{}': {}", lock, std::strerror(err));
      fail("train.run_dir '{}' is in use by another trainer (pid {}, which holds {}); wait for it to finish, stop it "
           "(it saves a checkpoint on SIGTERM), or train into another directory with --set train.run_dir=...",
           dir, holder, lock);
    }
    // Locked: from here on the trainer files are this run's; note those that do not exist yet.
    if (!lock_existed) new_files_.push_back(kLockFile);
    for (std::string_view name : kTrainerFiles)
      if (!fs::exists(dir + "/" + std::string(name), ec)) new_files_.emplace_back(name);
    const std::string pid = fmt::format("{}\n", ::getpid());
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
      const int err = errno;
      fail("cannot write the lock file '{}': {}{}", lock, std::strerror(err),
           err == ENOSPC || err == EDQUOT ? "; free space on its file system (a full one has room for no checkpoint "
                                            "either) or pick another directory with --set train.run_dir=..."
                                          : "");
    }
    probe_writable(dir, "train.run_dir");
    const std::string checkpoints = dir + "/checkpoints";
    if (fs::is_directory(checkpoints, ec)) {
      probe_writable(checkpoints, "the checkpoint directory");
    } else if (fs::exists(fs::symlink_status(checkpoints, ec))) {  // a file there failed the first save, steps later
      fail("train.run_dir '{}' holds a 'checkpoints' that is not a directory, so no checkpoint could be saved; move "
           "{} away or pick another directory with --set train.run_dir=...",
           dir, checkpoints);
    }
  } catch (...) {
    remove_started_files();
    throw;
  }
}

RunDirLock::~RunDirLock() {
  if (!keep_) remove_started_files();
  if (fd_ >= 0) ::close(fd_);  // releases the lock; the pid left in .lock is read only while locked
}

void RunDirLock::remove_started_files() noexcept {
  std::error_code ec;
  if (fd_ >= 0) {  // the files are this run's only while it holds the lock
    // The lock file goes last, still locked, so no other trainer can slip in meanwhile.
    for (auto it = new_files_.rbegin(); it != new_files_.rend(); ++it) fs::remove_all(dir_ + "/" + *it, ec);
    ::close(fd_);
    fd_ = -1;
  }
  for (const std::string& level : created_)
    if (!fs::remove(level, ec)) break;  // not empty (someone else's files): leave it and its parents
  created_.clear();
}

}  // namespace rfa
