#pragma once
// POSIX file helpers for durable checkpoint writes: every failure throws
// rfa::Error with the path and strerror(errno).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rfa {

// Writes a file piece by piece; fsync + close on finish(). The destructor of an
// unfinished writer closes the descriptor (the caller removes the partial file).
class FileWriter {
 public:
  explicit FileWriter(const std::string& path);  // creates/truncates, mode 0644
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  void write(const void* data, size_t size);
  void write(std::string_view s) { write(s.data(), s.size()); }
  void finish();  // fsync and close; throws on failure

 private:
  std::string path_;
  int fd_ = -1;
};

// A regular file open for reading at any offset; closed by the destructor. Holding it open reads
// the same file even if it is renamed or removed meanwhile (a trainer pruning its checkpoints).
class FileReader {
 public:
  FileReader() = default;  // no file: size 0
  explicit FileReader(const std::string& path);  // refuses a directory, a pipe, a device or a socket
  ~FileReader();
  FileReader(FileReader&& other) noexcept;
  FileReader& operator=(FileReader&& other) noexcept;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }  // when opened
  // Exactly `bytes` bytes from `offset` into dst; a file that ends before them is an error.
  void read_at(uint64_t offset, void* dst, size_t bytes) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

void file_write_durable(const std::string& path, std::string_view contents);  // write + fsync
std::vector<uint8_t> file_read_bytes(const std::string& path);
std::string file_read_text(const std::string& path);
// Text the user names on the command line (--config, generate -f, eval --data): a regular file as
// file_read_text, or a pipe or terminal read to its end, so `--config <(envsubst < x.yaml)` and
// `-f /dev/stdin` work. A FIFO nobody writes to reads as empty (opened non-blocking), never waits.
// `what` names the option in messages. More than max_bytes from a stream is refused.
std::string file_read_user_text(const std::string& path, const std::string& what,
                                size_t max_bytes = size_t(1) << 30);
void file_copy_durable(const std::string& from, const std::string& to);
void dir_fsync(const std::string& path);
void path_rename(const std::string& from, const std::string& to);  // rename(2), atomic

}  // namespace rfa
