// What a request's caller holds (engine.h): RequestHandle, the thread-safe queue of reply
// events the scheduler pushes and the HTTP or chat side waits on, and the finish reasons'
// names. The scheduler itself: engine.cpp.
#include "serve/engine.h"

namespace rfa {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
    case FinishReason::cancelled: return "cancelled";
    case FinishReason::error: return "error";
  }
  return "?";
}

// ---- RequestHandle ------------------------------------------------------------------

bool RequestHandle::ready() const {
  if (unread_finished_ > 0 || events_.size() >= 256) return true;  // 256: well before the engine's backlog bound
  return wake_on_text_.load() && unread_text_ > 0 && (!text_delivered_ || unread_text_ >= wake_every_.load());
}

void RequestHandle::push(ReplyEvent e) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (e.kind == ReplyEvent::Kind::finished) {
      ++finished_;
      ++unread_finished_;
    } else {
      ++unread_text_;
    }
    events_.push_back(std::move(e));
    wake = ready();
  }
  if (wake) cv_.notify_all();
}

void RequestHandle::wait(std::vector<ReplyEvent>& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, timeout, [this] { return ready(); });
  while (!events_.empty()) {
    out.push_back(std::move(events_.front()));
    events_.pop_front();
  }
  if (unread_text_ > 0) text_delivered_ = true;
  unread_text_ = unread_finished_ = 0;
}

size_t RequestHandle::backlog() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

bool RequestHandle::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_ == static_cast<int>(completion_tokens_.size());
}

int64_t RequestHandle::prompt_tokens() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return prompt_tokens_;
}

int64_t RequestHandle::cached_tokens() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_tokens_;
}

int64_t RequestHandle::completion_tokens(int choice) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completion_tokens_.at(static_cast<size_t>(choice));
}

std::vector<int32_t> RequestHandle::consumed(int choice) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return consumed_.at(static_cast<size_t>(choice));
}

}  // namespace rfa
