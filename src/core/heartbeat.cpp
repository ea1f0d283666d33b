#include "core/heartbeat.h"

#include <chrono>

#include "core/log.h"
#include "core/timer.h"

namespace rfa {

Heartbeat::Heartbeat(const char* module, std::string what, double interval_seconds)
    : module_(module), what_(std::move(what)), interval_seconds_(interval_seconds) {
  thread_ = std::thread([this] {
    Timer timer;
    std::unique_lock<std::mutex> lock(mutex_);
    auto interval = std::chrono::duration<double>(interval_seconds_);
    while (!wake_.wait_for(lock, interval, [this] { return stop_; }))
      log_info(module_, "{}: still running, {:.0f}s", what_, timer.seconds());
  });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

}  // namespace rfa
