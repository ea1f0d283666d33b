#include "core/stop_signals.h"

#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>

#include "core/error.h"
#include "core/parallel.h"

namespace rfa {
namespace {

std::atomic<int> g_stop_signal{0};

// The first signal asks for a stop; a second one (Ctrl-C pressed again) kills
// the process the default way: checkpoint writes are atomic, so the previous
// checkpoint stays loadable. signal() and raise() are async-signal-safe, and
// raise() targets this thread (the watcher), which does not block the signal.
extern "C" void on_stop_signal(int sig) {
  if (g_stop_signal.exchange(sig) != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

// SIGUSR1 is what Open MPI's mpirun forwards to every rank (docs/distributed.md); SIGHUP, the
// terminal closed (an ssh session dropped): stop and save.
sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kStopSignals) sigaddset(&set, sig);
  return set;
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGUSR1: return "SIGUSR1";
  }
  return "?";
}

void mask_change(int how, const sigset_t* set, sigset_t* old) {
  int rc = pthread_sigmask(how, set, old);
  RFA_ASSERT(rc == 0, "pthread_sigmask failed with {}", rc);
}

}  // namespace

int stop_signal() { return g_stop_signal.load(std::memory_order_relaxed); }

StopSignals::StopSignals() {
  g_stop_signal.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  // Not for a signal inherited as ignored (stop_signals.h): under nohup a hangup, in a script's
  // background job a SIGINT, must not stop the run.
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    sigaction(kStopSignals[i], nullptr, &old_[i]);
    if (old_[i].sa_handler != SIG_IGN) sigaction(kStopSignals[i], &action, nullptr);
  }
  // Block them all in every thread that computes: this one and the OpenMP pool (threads
  // the pool adds later are started from this thread and inherit its mask). The
  // kernel then delivers a process-directed stop signal to the watcher, the one
  // thread that leaves them unblocked (an ignored one it discards). (Pool threads idle outside the current team
  // may keep an open mask; a handler on an idle thread is harmless.)
  const sigset_t set = stop_set();
  mask_change(SIG_BLOCK, &set, &old_mask_);
  parallel_region([&](int, int) { mask_change(SIG_BLOCK, &set, nullptr); });
  watcher_ = std::thread([this, set] {
    mask_change(SIG_UNBLOCK, &set, nullptr);
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [this] { return quit_; });
  });
}

StopSignals::~StopSignals() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_one();
  watcher_.join();
  // A signal that arrived since the watcher left is still pending: unblocking here
  // runs our handler for it (a late request, dropped below) before the old handlers return.
  mask_change(SIG_SETMASK, &old_mask_, nullptr);
  for (size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &old_[i], nullptr);
  g_stop_signal.store(0);
}

std::string StopSignals::ignored_note() const {
  std::string ignored;
  int stopper = 0;  // the first stop signal still honoured
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    if (old_[i].sa_handler != SIG_IGN) {
      if (stopper == 0) stopper = kStopSignals[i];
      continue;
    }
    ignored += (ignored.empty() ? "" : ", ") + std::string(signal_name(kStopSignals[i]));
  }
  if (ignored.empty()) return "";
  const bool one = ignored.find(',') == std::string::npos;
  return fmt::format("{} {} inherited as ignored (nohup, or a script's background job) and stay{} ignored; {}", ignored,
                     one ? "was" : "were", one ? "s" : "",
                     stopper != 0 ? fmt::format("{} (kill -{} {}) stops this run with a checkpoint", signal_name(stopper),
                                                signal_name(stopper) + 3, ::getpid())
                                  : std::string("only SIGKILL stops this run, keeping its last checkpoint"));
}

}  // namespace rfa
