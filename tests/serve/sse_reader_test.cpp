// SseReader: an HTTP response's chunked or Content-Length body split into server-sent events,
// whatever the read boundaries; broken framing is an error, not a hang or a crash.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "serve/sse_reader.h"

using namespace rfa;

namespace {

std::string chunked(const std::vector<std::string>& chunks) {
  std::string out = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (const std::string& c : chunks) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx;ext=1\r\n", c.size());
    out += size + c + "\r\n";
  }
  return out + "0\r\nX-Trailer: t\r\n\r\n";
}

// Feeds `bytes` in pieces of `step` bytes; returns every event.
std::vector<std::string> read_all(SseReader& r, const std::string& bytes, size_t step) {
  std::vector<std::string> all, some;
  for (size_t i = 0; i < bytes.size(); i += step) {
    some.clear();
    r.feed(std::string_view(bytes).substr(i, step), some);
    all.insert(all.end(), some.begin(), some.end());
  }
  return all;
}

}  // namespace

TEST_CASE("sse reader: events of a chunked body, read one byte or many at a time") {
  // An event split across chunks, two in one chunk, a CRLF event, a comment, a multi-line data.
  const std::string body = chunked({"data: {\"a\":", "1}\n\ndata: two\n\ndata: three\r\n\r\n", ": comment\n\n",
                                    "event: x\ndata: four\ndata: more\n\n", "data: [DONE]\n\n"});
  const std::vector<std::string> expected{"{\"a\":1}", "two", "three", "four\nmore", "[DONE]"};
  for (size_t step : {size_t(1), size_t(2), size_t(3), size_t(7), size_t(64), body.size()}) {
    CAPTURE(step);
    SseReader r;
    CHECK(read_all(r, body, step) == expected);
    CHECK(r.status() == 200);
    CHECK(r.body_done());
  }
}

TEST_CASE("sse reader: an error reply with Content-Length keeps its body") {
  const std::string json = R"({"error": {"message": "queue full"}})";
  const std::string reply = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: " + std::to_string(json.size()) +
                            "\r\nRetry-After: 1\r\n\r\n" + json;
  SseReader r;
  CHECK(read_all(r, reply, 5).empty());
  CHECK(r.status() == 503);
  CHECK(r.body_done());
  CHECK(r.leftover() == json);
}

TEST_CASE("sse reader: a body that runs to the close, and nothing before the headers end") {
  SseReader r;
  std::vector<std::string> events;
  r.feed("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n", events);
  CHECK_FALSE(r.headers_done());
  CHECK(r.status() == 0);
  r.feed("\r\ndata: x\n\ndata: y", events);
  CHECK(r.headers_done());
  CHECK(events == std::vector<std::string>{"x"});
  CHECK_FALSE(r.body_done());  // no length: it ends when the connection does
}

TEST_CASE("sse reader: broken responses are errors") {
  std::vector<std::string> events;
  SseReader not_http;
  CHECK_THROWS_AS(not_http.feed("SSH-2.0-OpenSSH\r\n\r\n", events), Error);
  SseReader bad_size;
  CHECK_THROWS_AS(bad_size.feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", events), Error);
  SseReader no_crlf;
  CHECK_THROWS_AS(no_crlf.feed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab", events), Error);
  SseReader endless;  // an event that never ends is bounded
  std::string reply = "HTTP/1.1 200 OK\r\n\r\n";
  reply += std::string(size_t(1) << 21, 'x');
  CHECK_THROWS_AS(endless.feed(reply, events), Error);
}
