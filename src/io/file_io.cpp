#include "io/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace rfa {
namespace {

std::string reason() { return std::strerror(errno); }

// A failed write's reason; a full file system also gets the fix.
std::string write_reason() {
  if (errno == ENOSPC || errno == EDQUOT)
    return reason() + " (the file system is full: free space on it, or write somewhere else)";
  return reason();
}

}  // namespace

FileWriter::FileWriter(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create '{}': {}", path, reason());
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void FileWriter::write(const void* data, size_t size) {
  RFA_ASSERT(fd_ >= 0, "write to finished file '{}'", path_);
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    // Linux writes at most ~2 GiB per call; loop over partial writes and EINTR.
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write '{}': {}", path_, write_reason());
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void FileWriter::finish() {
  RFA_ASSERT(fd_ >= 0, "file '{}' finished twice", path_);
  if (::fsync(fd_) != 0) fail("cannot flush '{}' to disk: {}", path_, write_reason());
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot close '{}': {}", path_, write_reason());
}

void file_write_durable(const std::string& path, std::string_view contents) {
  FileWriter writer(path);
  writer.write(contents);
  writer.finish();
}

FileReader::FileReader(const std::string& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO with no writer would wait forever; the S_ISREG check refuses it.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) fail("cannot open '{}': {}", path, reason());
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    std::string why = S_ISREG(st.st_mode) ? reason()
                      : S_ISDIR(st.st_mode) ? "it is a directory, not a file"
                                            : "not a regular file (a pipe, device or socket)";
    ::close(fd_);
    fail("cannot read '{}': {}", path, why);
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

FileReader::FileReader(FileReader&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

FileReader& FileReader::operator=(FileReader&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

void FileReader::read_at(uint64_t offset, void* dst, size_t bytes) const {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pread(fd_, static_cast<uint8_t*>(dst) + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot read '{}': {}", path_, n == 0 ? "file shrank while reading" : reason());
    done += static_cast<size_t>(n);
  }
}

std::vector<uint8_t> file_read_bytes(const std::string& path) {
  const FileReader file(path);
  std::vector<uint8_t> bytes(static_cast<size_t>(file.size()));
  file.read_at(0, bytes.data(), bytes.size());
  return bytes;
}

std::string file_read_text(const std::string& path) {
  std::vector<uint8_t> bytes = file_read_bytes(path);
  return std::string(bytes.begin(), bytes.end());
}

std::string file_read_user_text(const std::string& path, const std::string& what, size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return file_read_text(path);
  if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
    fail("cannot read {} '{}': a socket or block device; give a file, a pipe or /dev/stdin", what, path);
  // Non-blocking open: a FIFO with no writer would otherwise wait forever. Then blocking reads,
  // which end at EOF (the writer closed; for a FIFO that never had one, at once).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("cannot open {} '{}': {}", what, path, reason());
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const std::string why = reason();
    ::close(fd);
    fail("cannot read {} '{}': {}", what, path, why);
  }
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = reason();
      ::close(fd);
      fail("cannot read {} '{}': {}", what, path, why);
    }
    if (n == 0) break;
    if (text.size() + size_t(n) > max_bytes) {
      ::close(fd);
      fail("{} '{}': more than {} bytes from a pipe; write it to a file first", what, path, max_bytes);
    }
    text.append(buffer, size_t(n));
  }
  ::close(fd);
  return text;
}

void file_copy_durable(const std::string& from, const std::string& to) {
  std::vector<uint8_t> bytes = file_read_bytes(from);
  FileWriter writer(to);
  writer.write(bytes.data(), bytes.size());
  writer.finish();
}

void dir_fsync(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open directory '{}' to flush it: {}", path, reason());
  int rc = ::fsync(fd);
  std::string why = rc != 0 ? reason() : "";
  ::close(fd);
  if (rc != 0) fail("cannot flush directory '{}' to disk: {}", path, why);
}

void path_rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) fail("cannot rename '{}' to '{}': {}", from, to, reason());
}

}  // namespace rfa
