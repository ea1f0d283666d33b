#pragma once
// Whole-file reads and atomic writes. A writer puts its bytes under a temporary
// name next to the target and renames it over the target only when complete, so
// a crash or a full disk never leaves a half-written file under the real name.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rfa {

// Throws Error naming the path if it cannot be read.
std::string file_read_all(const std::string& path);
// "<path>.tmp.<pid>": unique per process, in the target's directory (same filesystem).
std::string file_temp_path(const std::string& path);
// Removes "<path>.tmp.<pid>" files whose pid is no longer running (a writer
// killed before it could clean up); returns their paths. A file of a live pid
// (or of this process) is kept: its writer may still be at work.
std::vector<std::string> file_temp_remove_stale(const std::string& path);
// Renames temp over path; throws Error (and removes temp) on failure.
void file_commit(const std::string& temp, const std::string& path);
// Writes bytes to a temporary file, then renames it to path; creates parent directories.
void file_write_atomic(const std::string& path, std::string_view bytes);

}  // namespace rfa
