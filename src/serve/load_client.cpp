// load_run (load_client.h): S non-blocking connections driven by one epoll(7) loop. A stream
// moves connecting -> sending (the request may take several writes) -> reading (SseReader)
// -> done; its text chunks' arrival times give the gaps and the time to first token.
#include "serve/load_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/cpu_timer.h"
#include "core/error.h"
#include "serve/sse_reader.h"

namespace rfa {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Stream {
  enum class Phase { connecting, sending, reading, done } phase = Phase::connecting;
  int fd = -1;
  std::string request;
  size_t sent = 0;
  SseReader reader;
  Clock::time_point start;
  std::vector<double> times_ms;
  int64_t completion_tokens = -1, prompt_tokens = 0, cached_tokens = 0;
  bool got_done = false;
  std::string error;
};

addrinfo* resolve(const LoadTarget& t) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* out = nullptr;
  const std::string port = std::to_string(t.port);
  const int rc = getaddrinfo(t.host.c_str(), port.c_str(), &hints, &out);
  if (rc != 0 || !out) fail("bench serve: cannot resolve host '{}': {}; give an address such as 127.0.0.1", t.host,
                            gai_strerror(rc));
  return out;
}

void stream_fail(Stream& s, std::string why) {
  if (s.error.empty()) s.error = std::move(why);
  if (s.fd >= 0) close(s.fd);
  s.fd = -1;
  s.phase = Stream::Phase::done;
}

void stream_close(Stream& s) {
  close(s.fd);
  s.fd = -1;
  s.phase = Stream::Phase::done;
}

// One event's payload: the text chunks' times, the usage, an error chunk, [DONE].
void stream_event(Stream& s, const std::string& data, Clock::time_point now) {
  if (data == "[DONE]") {
    s.got_done = true;
    return;
  }
  const nlohmann::json chunk = nlohmann::json::parse(data, nullptr, false);
  if (chunk.is_discarded() || !chunk.is_object()) return stream_fail(s, "an event that is not JSON: " + data.substr(0, 200));
  if (auto e = chunk.find("error"); e != chunk.end())
    return stream_fail(s, "error event: " + e->dump().substr(0, 300));
  if (auto u = chunk.find("usage"); u != chunk.end() && u->is_object() && u->contains("completion_tokens")) {
    s.completion_tokens = u->value("completion_tokens", int64_t(0));
    s.prompt_tokens = u->value("prompt_tokens", int64_t(0));
    if (auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object())
      s.cached_tokens = d->value("cached_tokens", int64_t(0));
  }
  if (auto c = chunk.find("choices"); c != chunk.end() && c->is_array())
    for (const auto& choice : *c) {
      auto text = choice.find("text");
      if (text != choice.end() && text->is_string() && !text->get_ref<const std::string&>().empty())
        s.times_ms.push_back(ms_between(s.start, now));
    }
}

// One recv per readiness (level-triggered: what is left wakes the next epoll_wait): a token's
// event is one segment, and a second recv to see EAGAIN would double the system calls.
void stream_read(Stream& s, std::vector<std::string>& events) {
  char buffer[65536];
  const ssize_t n = recv(s.fd, buffer, sizeof buffer, 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n < 0) return stream_fail(s, std::string("recv: ") + std::strerror(errno));
  const Clock::time_point now = Clock::now();
  if (n == 0) {  // the server closed the connection
    if (!s.got_done) {
      std::string why = "the connection closed before data: [DONE]";
      if (s.reader.status() != 200 && s.reader.status() != 0)
        why = "HTTP " + std::to_string(s.reader.status()) + ": " + s.reader.leftover().substr(0, 300);
      return stream_fail(s, why);
    }
    return stream_close(s);
  }
  events.clear();
  try {
    s.reader.feed(std::string_view(buffer, static_cast<size_t>(n)), events);
  } catch (const Error& e) {
    return stream_fail(s, e.what());
  }
  if (s.reader.headers_done() && s.reader.status() != 200) {
    if (s.reader.body_done())
      stream_fail(s, "HTTP " + std::to_string(s.reader.status()) + ": " + s.reader.leftover().substr(0, 300));
    return;  // else the error's body is still arriving
  }
  for (const std::string& e : events) {
    stream_event(s, e, now);
    if (s.phase == Stream::Phase::done) return;
  }
  if (s.got_done) return stream_close(s);
  if (s.reader.body_done()) stream_fail(s, "the reply ended without data: [DONE]");
}

double quantile(std::vector<double> xs, double q) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  return xs[std::min(xs.size() - 1, static_cast<size_t>(q * double(xs.size())))];
}

}  // namespace

LoadTarget load_target_parse(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    fail("--url '{}': give the server's address as http://HOST:PORT (plain HTTP, as `rfa serve` speaks)", url);
  std::string rest = url.substr(scheme.size());
  if (const size_t slash = rest.find('/'); slash != std::string::npos) {
    if (rest.find_first_not_of('/', slash) != std::string::npos)
      fail("--url '{}': give only http://HOST:PORT; the paths are the OpenAI ones", url);
    rest.resize(slash);
  }
  LoadTarget t;
  std::string port_text;
  if (!rest.empty() && rest[0] == '[') {  // [IPv6]:port
    const size_t close_bracket = rest.find(']');
    if (close_bracket == std::string::npos) fail("--url '{}': an IPv6 address needs its closing ']'", url);
    t.host = rest.substr(1, close_bracket - 1);
    if (close_bracket + 1 < rest.size()) {
      if (rest[close_bracket + 1] != ':') fail("--url '{}': expected ':PORT' after ']'", url);
      port_text = rest.substr(close_bracket + 2);
    }
  } else if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    t.host = rest.substr(0, colon);
    port_text = rest.substr(colon + 1);
  } else {
    t.host = rest;
  }
  if (t.host.empty()) fail("--url '{}': no host; e.g. http://127.0.0.1:8080", url);
  t.port = 80;
  if (!port_text.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port_text.c_str(), &end, 10);
    if (end != port_text.c_str() + port_text.size() || p < 1 || p > 65535)
      fail("--url '{}': port '{}' is not a number from 1 to 65535", url, port_text);
    t.port = static_cast<int>(p);
  }
  return t;
}

std::string load_prompt(int letters, uint64_t seed) {
  static const char kAlphabet[] = "abcdefghij klmnopqrstuvwxyz";  // 27 symbols, the space among them
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  std::string out;
  out.reserve(static_cast<size_t>(std::max(letters, 0)));
  for (int i = 0; i < letters; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;  // 64-bit LCG, top bits used
    out += kAlphabet[(x >> 33) % 27];
  }
  return out;
}

LoadResult load_run(const LoadTarget& target, const LoadOptions& o) {
  if (o.streams < 1) fail("bench serve: {} streams; give at least 1", o.streams);
  addrinfo* address = resolve(target);
  std::vector<Stream> streams(static_cast<size_t>(o.streams));
  const std::string host_header =
      (target.host.find(':') != std::string::npos ? "[" + target.host + "]" : target.host) + ":" +
      std::to_string(target.port);
  for (size_t i = 0; i < streams.size(); ++i) {
    nlohmann::json body = {{"prompt", load_prompt(o.prompt_letters, o.prompt_seed + i)},
                           {"max_tokens", o.max_tokens},
                           {"temperature", o.temperature},
                           {"stream", true},
                           {"stream_options", {{"include_usage", true}}}};
    if (o.temperature > 0) body["seed"] = o.prompt_seed + i;
    const std::string text = body.dump();
    std::string& r = streams[i].request;
    r = "POST /v1/completions HTTP/1.1\r\nHost: " + host_header +
        "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nConnection: close\r\n";
    if (!target.api_key.empty()) r += "Authorization: Bearer " + target.api_key + "\r\n";
    r += "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
  }

  const double cpu0 = process_cpu_seconds();
  const Clock::time_point t0 = Clock::now();
  for (Stream& s : streams) {
    s.start = Clock::now();
    s.fd = socket(address->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s.fd < 0) {
      stream_fail(s, std::string("socket: ") + std::strerror(errno));
      continue;
    }
    const int one = 1;
    setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(s.fd, address->ai_addr, address->ai_addrlen) != 0 && errno != EINPROGRESS)
      stream_fail(s, std::string("connect: ") + std::strerror(errno));
  }
  freeaddrinfo(address);

  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) fail("bench serve: epoll_create1: {}", std::strerror(errno));
  int open_streams = 0;
  for (Stream& s : streams) {
    if (s.phase == Stream::Phase::done) continue;
    epoll_event ev{};
    ev.events = EPOLLOUT;
    ev.data.ptr = &s;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev) != 0) {
      stream_fail(s, std::string("epoll_ctl: ") + std::strerror(errno));
      continue;
    }
    ++open_streams;
  }
  std::vector<epoll_event> ready(streams.size());
  std::vector<std::string> events;
  while (open_streams > 0) {
    const double left_ms = o.timeout_s * 1e3 - ms_between(t0, Clock::now());
    if (left_ms <= 0) {
      for (Stream& s : streams)
        if (s.phase != Stream::Phase::done) stream_fail(s, fmt::format("not done after the timeout of {} s", o.timeout_s));
      break;
    }
    const int n = epoll_wait(ep, ready.data(), static_cast<int>(ready.size()), static_cast<int>(std::min(left_ms, 1000.0)) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("bench serve: epoll_wait: {}", std::strerror(errno));
    for (int k = 0; k < n; ++k) {
      Stream& s = *static_cast<Stream*>(ready[size_t(k)].data.ptr);
      if (s.phase == Stream::Phase::done) continue;
      if (s.phase == Stream::Phase::connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          stream_fail(s, fmt::format("connect to {}:{}: {}", target.host, target.port, std::strerror(err)));
        } else {
          s.phase = Stream::Phase::sending;
        }
      }
      if (s.phase == Stream::Phase::sending) {
        const ssize_t sent = send(s.fd, s.request.data() + s.sent, s.request.size() - s.sent, MSG_NOSIGNAL);
        if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          stream_fail(s, std::string("send: ") + std::strerror(errno));
        } else {
          if (sent > 0) s.sent += static_cast<size_t>(sent);
          if (s.sent == s.request.size()) {
            s.start = Clock::now();  // the request is out: the time to first token counts from here
            s.phase = Stream::Phase::reading;
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.ptr = &s;
            if (epoll_ctl(ep, EPOLL_CTL_MOD, s.fd, &ev) != 0) stream_fail(s, std::string("epoll_ctl: ") + std::strerror(errno));
          }
        }
      } else if (s.phase == Stream::Phase::reading) {
        stream_read(s, events);
      }
      if (s.phase == Stream::Phase::done) --open_streams;  // closing its socket took it off the epoll set
    }
  }
  close(ep);
  for (Stream& s : streams)
    if (s.fd >= 0) {
      close(s.fd);
      s.fd = -1;
    }

  LoadResult r;
  r.streams = o.streams;
  r.seconds = ms_between(t0, Clock::now()) / 1e3;
  r.client_cpu_s = process_cpu_seconds() - cpu0;
  std::vector<double> gaps, ttfts;
  for (const Stream& s : streams) {
    if (!s.error.empty() || s.completion_tokens < 0) {
      ++r.failed;
      if (r.first_error.empty()) r.first_error = s.error.empty() ? "no usage in the reply" : s.error;
      continue;
    }
    r.generated += s.completion_tokens;
    r.prompt_tokens += s.prompt_tokens;
    r.cached_tokens += s.cached_tokens;
    if (!s.times_ms.empty()) ttfts.push_back(s.times_ms.front());
    for (size_t i = 1; i < s.times_ms.size(); ++i) gaps.push_back(s.times_ms[i] - s.times_ms[i - 1]);
  }
  r.tokens_per_s = r.seconds > 0 ? double(r.generated) / r.seconds : 0;
  r.gap_ms_p50 = quantile(gaps, 0.5);
  r.gap_ms_p95 = quantile(gaps, 0.95);
  r.gap_ms_p99 = quantile(gaps, 0.99);
  r.gap_ms_max = gaps.empty() ? 0 : *std::max_element(gaps.begin(), gaps.end());
  r.ttft_ms_median = quantile(ttfts, 0.5);
  return r;
}

}  // namespace rfa
