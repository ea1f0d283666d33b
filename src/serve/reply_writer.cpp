// ReplyStream and reply_collect (reply_writer.h).
#include "serve/reply_writer.h"

#include <httplib.h>

#include "serve/peer_socket.h"

namespace rfa {
namespace {

// Whether the client of `fd` has gone away, asked of the socket at most once per kReplyPoll: a
// stream's handler wakes once per token (or per batch of them), and a poll each time was a
// system call per token.
bool peer_gone(int fd, std::chrono::steady_clock::time_point& checked) {
  const auto now = std::chrono::steady_clock::now();
  if (now - checked < kReplyPoll) return false;
  checked = now;
  return peer_socket_closed(fd);
}

std::string sse(const nlohmann::json& j) { return "data: " + api_dump(j) + "\n\n"; }

}  // namespace

ApiUsage usage_of(const RequestHandle& h, int n) {
  ApiUsage u;
  u.prompt_tokens = h.prompt_tokens();
  u.cached_tokens = h.cached_tokens();
  for (int c = 0; c < n; ++c) u.completion_tokens += h.completion_tokens(c);
  return u;
}

bool ReplyStream::write_some(httplib::DataSink& sink) {
  std::string out;
  if (!started_) {
    started_ = true;
    text_chunks_ = std::make_unique<ApiTextChunks>(head, n);
    if (head.chat)
      for (int c = 0; c < n; ++c) out += sse(api_chunk_json(head, c, "", "", true));
  }
  events_.clear();
  handle->wait(events_, kReplyPoll);
  for (const ReplyEvent& e : events_) {
    if (e.kind == ReplyEvent::Kind::text) {
      text_chunks_->append(out, e.choice, e.text);
    } else {
      ++finished_;
      if (e.reason == FinishReason::error)
        out += sse(api_error_json(e.text, "server_error"));
      else if (e.reason != FinishReason::cancelled)
        out += sse(api_chunk_json(head, e.choice, "", finish_reason_name(e.reason)));
    }
  }
  const bool last = finished_ == n;
  if (last) {
    if (include_usage) out += sse(api_usage_chunk_json(head, usage_of(*handle, n)));
    out += "data: [DONE]\n\n";
  }
  if ((!out.empty() && !sink.write(out.data(), out.size())) || (!last && peer_gone(fd, peer_checked_))) {
    handle->cancel();
    return false;
  }
  if (last) sink.done();
  return true;
}

CollectedReply reply_collect(RequestHandle& handle, int n, int fd) {
  handle.wake_on_text(false);  // the reply is sent whole: wake for the finish events only
  CollectedReply r;
  r.choices.resize(static_cast<size_t>(n));
  std::vector<ReplyEvent> events;
  std::chrono::steady_clock::time_point peer_checked{};
  for (int finished = 0; finished < n;) {
    events.clear();
    handle.wait(events, kReplyPoll);
    for (ReplyEvent& e : events) {
      if (e.kind == ReplyEvent::Kind::text) {
        r.choices[static_cast<size_t>(e.choice)].text += e.text;
        continue;
      }
      ++finished;
      r.choices[static_cast<size_t>(e.choice)].finish_reason = finish_reason_name(e.reason);
      if (e.reason == FinishReason::error) r.error = e.text;
    }
    if (finished < n && peer_gone(fd, peer_checked)) {
      handle.cancel();  // nobody is left to answer
      r.client_gone = true;
      return r;
    }
  }
  return r;
}

}  // namespace rfa
