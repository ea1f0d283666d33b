#include "core/cgroup.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/number_parse.h"

namespace rfa {
namespace {

namespace fs = std::filesystem;

// The first word of a text as a number (the files end in a newline); `none` if there is none or
// it is not a number ("max").
double first_number(const std::string& text, double none) {
  std::istringstream in(text);
  std::string word;
  double v = 0;
  return in >> word && parse_number(word, &v) ? v : none;
}

// The value of `key` in a memory.stat text ("key value" lines), or 0.
double stat_value(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string name;
  double value = 0;
  while (lines >> name >> value)
    if (name == key) return value;
  return 0;
}

// The directories of the process's group and of its ancestors, the root first, in the hierarchy
// that holds `controller`: the v1 one whose line names it, else the v2 one. Only those that exist.
std::vector<fs::path> cgroup_dirs(const std::string& proc_self_cgroup, const std::string& root,
                                  const std::string& controller, bool* v2) {
  std::istringstream lines(proc_self_cgroup);
  std::string line, v2_path;
  std::vector<fs::path> dirs;
  auto chain = [&](const fs::path& top, const std::string& path) {
    std::error_code ec;
    fs::path group = top;
    if (fs::is_directory(group, ec)) dirs.push_back(group);
    std::istringstream parts(path);
    std::string part;
    while (std::getline(parts, part, '/'))
      if (!part.empty() && fs::is_directory(group /= part, ec)) dirs.push_back(group);
  };
  while (std::getline(lines, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos || b + 1 >= line.size() || line[b + 1] != '/') continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) {
      if (line.compare(0, a, "0") == 0) v2_path = path;
      continue;
    }
    std::istringstream names(controllers);
    std::string name;
    bool named = false;
    while (std::getline(names, name, ','))
      named = named || name == controller;
    if (!named) continue;
    for (const std::string& mount : {controllers, controller}) {
      std::error_code ec;
      if (!fs::is_directory(fs::path(root) / mount, ec)) continue;
      chain(fs::path(root) / mount, path);
      *v2 = false;
      return dirs;
    }
  }
  if (!v2_path.empty()) chain(root, v2_path);
  *v2 = true;
  return dirs;
}

}  // namespace

std::string kernel_file_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int cgroup_cpu_quota(const std::string& proc_self_cgroup, const std::string& root) {
  bool v2 = true;
  double tightest = 0;
  for (const fs::path& dir : cgroup_dirs(proc_self_cgroup, root, "cpu", &v2)) {
    double quota = 0, period = 0;
    if (v2) {
      std::istringstream in(kernel_file_text((dir / "cpu.max").string()));
      std::string q, p;
      if (!(in >> q >> p)) continue;
      quota = first_number(q, 0);
      period = first_number(p, 0);
    } else {
      quota = first_number(kernel_file_text((dir / "cpu.cfs_quota_us").string()), 0);
      period = first_number(kernel_file_text((dir / "cpu.cfs_period_us").string()), 0);
    }
    if (quota <= 0 || period <= 0) continue;
    const double cpus = quota / period;
    if (tightest == 0 || cpus < tightest) tightest = cpus;
  }
  return tightest > 0 ? std::max(1, static_cast<int>(std::ceil(tightest - 1e-9))) : 0;
}

CgroupMemory cgroup_memory(const std::string& proc_self_cgroup, const std::string& root) {
  bool v2 = true;
  CgroupMemory tightest;
  for (const fs::path& dir : cgroup_dirs(proc_self_cgroup, root, "memory", &v2)) {
    const char* limit_file = v2 ? "memory.max" : "memory.limit_in_bytes";
    const char* usage_file = v2 ? "memory.current" : "memory.usage_in_bytes";
    const double limit = first_number(kernel_file_text((dir / limit_file).string()), -1);
    if (limit < 0 || limit >= 0x1p62) continue;  // v1's "unlimited" is 2^63 rounded down to a page
    const double usage = first_number(kernel_file_text((dir / usage_file).string()), 0);
    const std::string stat = kernel_file_text((dir / "memory.stat").string());
    // The group's file cache (active and inactive) is reclaimed under its limit, as MemAvailable
    // counts the machine's: what a run may still allocate is the limit less the rest of its usage.
    auto file_cache = [&](const std::string& prefix) {
      return stat_value(stat, prefix + "active_file") + stat_value(stat, prefix + "inactive_file");
    };
    const double cache = v2 ? file_cache("") : std::max(file_cache("total_"), file_cache(""));
    const int64_t available = static_cast<int64_t>(std::max(0.0, limit - std::max(0.0, usage - cache)));
    if (tightest.available < 0 || available < tightest.available)
      tightest = {available, static_cast<int64_t>(limit), static_cast<int64_t>(usage)};
  }
  return tightest;
}

}  // namespace rfa
