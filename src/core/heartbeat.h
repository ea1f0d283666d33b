#pragma once
// Progress for long calls that cannot report it themselves (SentencePiece
// training, corpus encoding): while a Heartbeat lives, a background thread logs
// "<what>: still running, 30s" every `interval_seconds`. Destruction stops it.
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace rfa {

class Heartbeat {
 public:
  Heartbeat(const char* module, std::string what, double interval_seconds = 15.0);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  const char* module_;
  std::string what_;
  double interval_seconds_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace rfa
