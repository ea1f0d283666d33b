#pragma once
// The client side of one streamed reply, read incrementally: an HTTP/1.1 response (status line,
// headers, then a body framed by Transfer-Encoding: chunked or Content-Length, or running to the
// close) whose body is server-sent events. `feed` takes bytes as they arrive from the socket and
// returns each complete event's `data:` payload in order. Used by `rfa bench serve`'s load client
// (load_client.h), which reads 64 streams on one thread: no copy of the whole body is kept.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rfa {

class SseReader {
 public:
  // Appends to `events` the data payload of each event completed by these bytes (an event with
  // several data lines gives them joined by '\n', as the SSE specification says). Throws
  // rfa::Error on a response that is not HTTP or whose chunk framing is broken.
  void feed(std::string_view bytes, std::vector<std::string>& events);

  bool headers_done() const { return state_ != State::headers; }
  int status() const { return status_; }  // 0 until the status line has arrived
  bool body_done() const { return state_ == State::done; }  // the last chunk, or Content-Length reached
  // The body's bytes that were not an event yet (a non-stream reply, an error's JSON); at most 64 KiB.
  const std::string& leftover() const { return event_; }

 private:
  enum class State { headers, chunk_size, chunk_data, chunk_data_end, trailer, plain, done };
  void parse_headers(std::string_view head);
  void body_bytes(std::string_view data, std::vector<std::string>& events);

  State state_ = State::headers;
  std::string line_;      // headers or a chunk-size line being assembled
  int status_ = 0;
  bool chunked_ = false;
  long long remaining_ = -1;  // bytes left of the current chunk, or of Content-Length (-1: to the close)
  std::string event_;     // body text since the last event boundary
};

}  // namespace rfa
