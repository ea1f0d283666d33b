#pragma once
// How one request's reply events (engine.h) become its HTTP answer: streamed as server-sent
// events by the response's content provider (`stream: true`), or collected whole. Both look at
// the client's socket at most every kReplyPoll, and give up on a client that went away.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "serve/engine.h"
#include "serve/openai_api.h"

namespace httplib {
class DataSink;
}

namespace rfa {

inline constexpr auto kReplyPoll = std::chrono::milliseconds(100);  // how often a waiting reply looks at its client

ApiUsage usage_of(const RequestHandle& h, int n);

// The state a streamed reply keeps between its content provider's calls.
struct ReplyStream {
  std::shared_ptr<RequestHandle> handle;
  ApiResponseHead head;
  int n = 1;
  bool include_usage = false;
  int fd = -1;  // the client's socket (peer_socket.h), -1 if unknown

  // Writes the events that arrived since the last call as one chunk (a handler kept from running
  // for a few ticks sends their tokens in one write, not a system call each), the usage and
  // [DONE] after the last choice. False when the client is gone (the request is cancelled).
  bool write_some(httplib::DataSink& sink);

 private:
  std::unique_ptr<ApiTextChunks> text_chunks_;  // from the first call (head and n are set by then)
  bool started_ = false;
  int finished_ = 0;
  std::chrono::steady_clock::time_point peer_checked_{};
  std::vector<ReplyEvent> events_;
};

// A reply collected whole: the choices' text and finish reasons, the first error's message.
struct CollectedReply {
  std::vector<ApiChoice> choices;
  std::string error;
  bool client_gone = false;  // the client closed its connection first; the request is cancelled
};
CollectedReply reply_collect(RequestHandle& handle, int n, int fd);

}  // namespace rfa
