// SseReader (sse_reader.h): an HTTP/1.1 response read as it arrives, its body split into
// server-sent events. Framing per RFC 9112 (chunked: hex size, optional extensions, CRLF, data,
// CRLF; a zero chunk, then trailers up to an empty line); events per the SSE specification
// (blocks separated by a blank line, "data:" lines joined by '\n', other fields ignored).
#include "serve/sse_reader.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/error.h"

namespace rfa {
namespace {

constexpr size_t kMaxHead = 64 * 1024;    // status line and headers
constexpr size_t kMaxEvent = 1 << 20;     // one event's text

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The data of one event block (its lines without the blank line that ended it); false if none.
bool event_data(std::string_view block, std::string& out) {
  bool any = false;
  out.clear();
  while (!block.empty()) {
    const size_t nl = block.find('\n');
    std::string_view line = block.substr(0, nl);
    block = nl == std::string_view::npos ? std::string_view{} : block.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, 5) != "data:") continue;
    line.remove_prefix(5);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (any) out += '\n';
    out += line;
    any = true;
  }
  return any;
}

}  // namespace

void SseReader::parse_headers(std::string_view head) {
  const size_t eol = head.find("\r\n");
  const std::string_view status_line = head.substr(0, eol);
  // "HTTP/1.1 200 OK"
  if (status_line.substr(0, 5) != "HTTP/" || status_line.size() < 12 || status_line[8] != ' ')
    fail("bench serve: the server's reply does not start with an HTTP status line: '{}'",
         std::string(status_line.substr(0, 80)));
  status_ = std::atoi(std::string(status_line.substr(9, 3)).c_str());
  if (status_ < 100 || status_ > 599)
    fail("bench serve: HTTP status '{}' is not a number from 100 to 599", std::string(status_line.substr(9, 3)));
  std::string_view rest = eol == std::string_view::npos ? std::string_view{} : head.substr(eol + 2);
  while (!rest.empty()) {
    const size_t nl = rest.find("\r\n");
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (iequals(name, "transfer-encoding") && iequals(value, "chunked")) chunked_ = true;
    if (iequals(name, "content-length")) remaining_ = std::atoll(std::string(value).c_str());
  }
  if (chunked_) {
    state_ = State::chunk_size;
    remaining_ = 0;
  } else {
    state_ = remaining_ == 0 ? State::done : State::plain;
  }
}

void SseReader::body_bytes(std::string_view data, std::vector<std::string>& events) {
  event_.append(data.data(), data.size());
  size_t start = 0;
  for (;;) {
    const size_t cut = event_.find("\n\n", start);
    const size_t cut_crlf = event_.find("\r\n\r\n", start);
    size_t end, skip;
    if (cut == std::string::npos && cut_crlf == std::string::npos) break;
    if (cut_crlf != std::string::npos && (cut == std::string::npos || cut_crlf < cut)) {
      end = cut_crlf;
      skip = 4;
    } else {
      end = cut;
      skip = 2;
    }
    std::string data_text;
    if (event_data(std::string_view(event_).substr(start, end - start), data_text)) events.push_back(std::move(data_text));
    start = end + skip;
  }
  event_.erase(0, start);
  if (event_.size() > kMaxEvent) fail("bench serve: an event of the stream exceeds {} bytes without ending", kMaxEvent);
}

void SseReader::feed(std::string_view bytes, std::vector<std::string>& events) {
  while (!bytes.empty()) {
    switch (state_) {
      case State::headers: {
        const size_t old = line_.size();
        line_.append(bytes.data(), bytes.size());
        // The blank line may straddle the old and the new bytes.
        const size_t end = line_.find("\r\n\r\n", old >= 3 ? old - 3 : 0);
        if (end == std::string::npos) {
          if (line_.size() > kMaxHead) fail("bench serve: the reply's headers exceed {} bytes", kMaxHead);
          return;
        }
        const std::string head = line_.substr(0, end);
        const std::string rest = line_.substr(end + 4);
        line_.clear();
        parse_headers(head);
        bytes = {};
        if (!rest.empty()) feed(rest, events);
        return;
      }
      case State::chunk_size: {
        const size_t nl = bytes.find('\n');
        line_.append(bytes.data(), std::min(nl == std::string_view::npos ? bytes.size() : nl + 1, bytes.size()));
        if (nl == std::string_view::npos) {
          if (line_.size() > 1024) fail("bench serve: a chunk-size line exceeds 1024 bytes");
          return;
        }
        bytes.remove_prefix(nl + 1);
        const std::string_view size_text = trim(std::string_view(line_).substr(0, line_.find_first_of(";\r\n")));
        char* end = nullptr;
        const std::string hex(size_text);
        const long long size = std::strtoll(hex.c_str(), &end, 16);
        if (hex.empty() || end != hex.c_str() + hex.size() || size < 0)
          fail("bench serve: bad chunk size line '{}'", std::string(trim(line_)));
        line_.clear();
        remaining_ = size;
        state_ = size == 0 ? State::trailer : State::chunk_data;
        break;
      }
      case State::chunk_data: {
        const size_t n = static_cast<size_t>(std::min<long long>(remaining_, static_cast<long long>(bytes.size())));
        body_bytes(bytes.substr(0, n), events);
        bytes.remove_prefix(n);
        remaining_ -= static_cast<long long>(n);
        if (remaining_ == 0) state_ = State::chunk_data_end;
        break;
      }
      case State::chunk_data_end: {  // the CRLF after a chunk's data, possibly split across reads
        line_ += bytes.front();
        bytes.remove_prefix(1);
        if (line_ == "\r") break;
        if (line_ != "\r\n") fail("bench serve: a chunk's data is not followed by CRLF");
        line_.clear();
        state_ = State::chunk_size;
        break;
      }
      case State::trailer: {  // trailer lines up to an empty one
        const size_t nl = bytes.find('\n');
        line_.append(bytes.data(), nl == std::string_view::npos ? bytes.size() : nl + 1);
        if (nl == std::string_view::npos) return;
        bytes.remove_prefix(nl + 1);
        const bool empty = line_ == "\r\n" || line_ == "\n";
        line_.clear();
        if (empty) state_ = State::done;
        break;
      }
      case State::plain: {
        size_t n = bytes.size();
        if (remaining_ >= 0) n = static_cast<size_t>(std::min<long long>(remaining_, static_cast<long long>(n)));
        body_bytes(bytes.substr(0, n), events);
        bytes.remove_prefix(n);
        if (remaining_ >= 0) {
          remaining_ -= static_cast<long long>(n);
          if (remaining_ == 0) state_ = State::done;
        }
        break;
      }
      case State::done:
        return;  // bytes after the reply (none are expected on a connection we close)
    }
  }
}

}  // namespace rfa
