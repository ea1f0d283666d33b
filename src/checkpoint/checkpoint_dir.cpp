#include "checkpoint/checkpoint_dir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "io/file_io.h"
#include "checkpoint/train_state.h"
#include "core/error.h"

namespace rfa {
namespace fs = std::filesystem;
namespace {

constexpr const char* kLatest = "latest";
constexpr const char* kTempMarker = ".tmp-";

}  // namespace

int64_t checkpoint_name_step(const std::string& name) {
  if (name.rfind("step-", 0) != 0 || name.size() == 5) return -1;
  int64_t step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (int64_t{1} << 58)) return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

namespace {

void check_name(const std::string& name) {
  if (name.empty() || name == kLatest || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find(kTempMarker) != std::string::npos) {
    fail("'{}' is not a valid checkpoint name (a plain directory name, not 'latest')", name);
  }
}

// The pid in "<anything>.tmp-<pid>", or -1.
long temp_owner(const std::string& name) {
  size_t at = name.rfind(kTempMarker);
  if (at == std::string::npos) return -1;
  std::string digits = name.substr(at + std::strlen(kTempMarker));
  if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return -1;
  return std::stol(digits);
}

void remove_quietly(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

// Replaces root/name by the directory `from` in one step: rename(2) if the name is free,
// else renameat2(RENAME_EXCHANGE) so `name` never stops existing; `from` then holds the
// old checkpoint and the caller removes it.
void dir_install(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (!fs::exists(to, ec)) {
    path_rename(from, to);
    return;
  }
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) return;
  if (errno != EINVAL && errno != ENOSYS) {
    fail("cannot replace checkpoint '{}' with '{}': {}", to, from, std::strerror(errno));
  }
  // The filesystem cannot exchange: move the old one aside first. A crash between the
  // two renames leaves `to` missing for a moment; only re-saving an existing step hits this.
  std::string aside = fmt::format("{}.old{}{}", to, kTempMarker, ::getpid());
  path_rename(to, aside);
  path_rename(from, to);
  path_rename(aside, from);  // the caller removes `from`, now the old checkpoint
}

void latest_write(const std::string& root, const std::string& name) {
  std::string temp = fmt::format("{}/{}{}{}", root, kLatest, kTempMarker, ::getpid());
  try {
    file_write_durable(temp, name + "\n");
    path_rename(temp, root + "/" + kLatest);
  } catch (...) {
    remove_quietly(temp);
    throw;
  }
  dir_fsync(root);
}

}  // namespace

std::string checkpoint_name(int64_t step) { return fmt::format("step-{:06d}", step); }

std::string checkpoint_dir_commit(const std::string& root, const std::string& name,
                                  const std::function<void(const std::string& temp_dir)>& fill) {
  check_name(name);
  std::error_code ec;
  bool created = fs::create_directories(root, ec);
  if (ec) fail("cannot create checkpoint directory '{}': {}", root, ec.message());
  if (created) {  // make the new root's own directory entry durable
    fs::path p = fs::absolute(root);
    if (!p.has_filename()) p = p.parent_path();  // "ck/" -> "ck"
    dir_fsync(p.parent_path().string());
  }
  const std::string temp = fmt::format("{}/{}{}{}", root, name, kTempMarker, ::getpid());
  const std::string final_dir = root + "/" + name;
  remove_quietly(temp);  // a leftover of an earlier failure of this very process
  if (!fs::create_directory(temp, ec) || ec) {
    fail("cannot create checkpoint directory '{}': {}", temp, ec ? ec.message() : "it already exists");
  }
  try {
    fill(temp);
    dir_fsync(temp);
    dir_install(temp, final_dir);
    dir_fsync(root);
    latest_write(root, name);
  } catch (const Error&) {
    remove_quietly(temp);
    throw;
  } catch (const std::exception& e) {
    remove_quietly(temp);
    fail("cannot write checkpoint '{}': {}", final_dir, e.what());
  } catch (...) {
    remove_quietly(temp);
    throw;
  }
  remove_quietly(temp);  // the replaced old checkpoint, if dir_install swapped one out
  return final_dir;
}

namespace {

// The pointer's text for a message: the file may hold any bytes, and any number of them.
std::string printable(const std::string& text) {
  std::string shown;
  for (size_t i = 0; i < text.size() && i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    shown += c >= 0x20 && c < 0x7f ? std::string(1, text[i]) : fmt::format("\\x{:02x}", c);
  }
  return text.size() > 64 ? shown + "..." : shown;
}

// The fix for a damaged `latest`: point it at the newest checkpoint that has its weights.
std::string latest_repair(const std::string& root, const std::string& pointer) {
  std::vector<CheckpointEntry> all;
  try {
    all = checkpoint_list(root);
  } catch (const Error&) {
  }
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    std::error_code ec;
    if (fs::exists(root + "/" + it->name + "/model.safetensors", ec))
      return fmt::format("point it at the newest checkpoint there with `echo {} > {}`, or name a checkpoint "
                         "directory ({}/{}) instead of the run", it->name, pointer, root, it->name);
  }
  return fmt::format("no checkpoint is left under {}: remove it (`rm {}`)", root, pointer);
}

}  // namespace

std::string checkpoint_latest(const std::string& root) {
  const std::string pointer = root + "/" + kLatest;
  std::error_code ec;
  if (!fs::exists(pointer, ec)) return "";
  std::string name = file_read_text(pointer);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r' || name.back() == ' ')) name.pop_back();
  try {
    check_name(name);
  } catch (const Error&) {
    fail("checkpoint pointer '{}' is corrupted: it holds '{}', not a checkpoint name; {}", pointer, printable(name),
         latest_repair(root, pointer));
  }
  const std::string dir = root + "/" + name;
  if (!fs::is_directory(dir, ec))
    fail("checkpoint pointer '{}' names '{}/{}' but that directory is missing; {}", pointer, root, printable(name),
         latest_repair(root, pointer));
  return dir;
}

std::vector<CheckpointEntry> checkpoint_list(const std::string& root) {
  std::vector<CheckpointEntry> out;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, ec)) {
    std::string name = entry.path().filename().string();
    int64_t step = checkpoint_name_step(name);
    std::error_code type_ec;
    if (step < 0 || !entry.is_directory(type_ec)) continue;
    double val_loss = std::nan("");
    try {
      val_loss = train_state_parse(file_read_text(entry.path().string() + "/state.json"), name).val_loss;
    } catch (const Error&) {
      // Unreadable state: never "best", pruned by age like any other.
    }
    out.push_back({name, step, val_loss});
  }
  if (ec) fail("cannot list checkpoint directory '{}': {}", root, ec.message());
  std::sort(out.begin(), out.end(), [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step < b.step; });
  return out;
}

std::vector<std::string> checkpoint_prune(const std::string& root, int keep_last, bool keep_best) {
  std::vector<CheckpointEntry> all = checkpoint_list(root);
  std::set<std::string> keep;
  for (size_t i = all.size() > size_t(std::max(keep_last, 0)) ? all.size() - keep_last : 0; i < all.size(); ++i) {
    keep.insert(all[i].name);
  }
  if (keep_best) {
    const CheckpointEntry* best = nullptr;
    for (const CheckpointEntry& e : all) {
      if (std::isfinite(e.val_loss) && (best == nullptr || e.val_loss < best->val_loss)) best = &e;
    }
    if (best != nullptr) keep.insert(best->name);
  }
  std::string latest = checkpoint_latest(root);
  if (!latest.empty()) keep.insert(fs::path(latest).filename().string());

  std::vector<std::string> removed;
  for (const CheckpointEntry& e : all) {
    if (keep.count(e.name)) continue;
    // Rename first so a crash mid-removal leaves a temp dir, never a half checkpoint.
    std::string doomed = fmt::format("{}/{}{}{}", root, e.name, kTempMarker, ::getpid());
    path_rename(root + "/" + e.name, doomed);
    remove_quietly(doomed);
    removed.push_back(e.name);
  }
  // Temp dirs and pointer files of writers that died (their pid is gone).
  std::vector<fs::path> stale;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(root, ec)) {
    long pid = temp_owner(entry.path().filename().string());
    if (pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      stale.push_back(entry.path());
    }
  }
  for (const fs::path& path : stale) remove_quietly(path);
  return removed;
}

}  // namespace rfa
