#include "core/stop_signals.h"

#include <pthread.h>

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

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);  // what Open MPI's mpirun forwards to every rank (docs/distributed.md)
  sigaddset(&set, SIGHUP);   // the terminal closed (an ssh session dropped): stop and save, unless ignored
  return set;
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
  sigaction(SIGINT, &action, &old_int_);
  sigaction(SIGTERM, &action, &old_term_);
  sigaction(SIGUSR1, &action, &old_usr1_);
  // SIGHUP only when not ignored: under nohup (SIG_IGN inherited) a hangup must not stop the run.
  sigaction(SIGHUP, nullptr, &old_hup_);
  if (old_hup_.sa_handler != SIG_IGN) sigaction(SIGHUP, &action, nullptr);
  // Block them all in every thread that computes: this one and the OpenMP pool (threads
  // the pool adds later are started from this thread and inherit its mask). The
  // kernel then delivers a process-directed SIGINT/SIGTERM to the watcher, the one
  // thread that leaves them unblocked. (Pool threads idle outside the current team
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
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGUSR1, &old_usr1_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
  g_stop_signal.store(0);
}

}  // namespace rfa
