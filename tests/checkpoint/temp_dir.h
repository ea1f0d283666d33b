#pragma once
// A fresh directory under the system temp dir, removed with everything in it.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include <fmt/format.h>

namespace rfa::test {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() / fmt::format("rfa-test-{}-{}", ::getpid(), counter++)).string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace rfa::test
