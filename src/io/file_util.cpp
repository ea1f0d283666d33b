#include "io/file_util.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace rfa {

std::string file_read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open {}: {}", path, std::strerror(errno));
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  std::string bytes(static_cast<size_t>(size), '\0');
  if (size > 0 && !in.read(bytes.data(), size)) fail("cannot read {} ({} bytes)", path, size);
  return bytes;
}

std::string file_temp_path(const std::string& path) {
  return fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
}

void file_commit(const std::string& temp, const std::string& path) {
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    fail("cannot rename {} to {}: {}", temp, path, ec.message());
  }
}

void file_write_atomic(const std::string& path, std::string_view bytes) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) fail("cannot create directory {} for {}: {}", parent.string(), path, ec.message());
  std::string temp = file_temp_path(path);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) fail("cannot create {}: {}", temp, std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::filesystem::remove(temp, ec);
      fail("cannot write {} bytes to {} (disk full?)", bytes.size(), temp);
    }
  }
  file_commit(temp, path);
}

}  // namespace rfa
