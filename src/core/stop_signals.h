#pragma once
// SIGINT/SIGTERM (and SIGUSR1, which Open MPI's mpirun forwards to every rank while it
// kills the job on SIGTERM/SIGINT; and SIGHUP, a closed terminal) as a request to stop, for
// long runs (`rfa train`). While a StopSignals lives, the first of them sets a process-wide flag
// that long loops poll with stop_requested() at points where stopping loses nothing
// (between micro-batches, between evaluation batches); a second one kills the
// process the default way (exit status 128 + signal).
//
// One rule for every command and signal: a signal the process inherited as ignored stays
// ignored. That is the shell's convention: `nohup` ignores SIGHUP, and a non-interactive
// shell starts a background job (`rfa train ... &` in a script) with SIGINT ignored so that
// Ctrl-C at the terminal does not reach it. StopSignals installs its handler only for the
// stop signals that were not ignored; the other commands install none, so they take the
// default action or keep the inherited ignore. (`rfa train` once took an inherited-ignored
// SIGINT and stopped where `rfa generate` kept it ignored.)
//
// Only a watcher thread ever runs the handler: the constructor blocks the
// signals in the calling thread and in the OpenMP workers. A handler run on a
// compute thread can corrupt the heap: oneDNN's JIT sgemm kernels point rsp at
// a heap workspace while they run, and the kernel pushes the signal frame at rsp
// (oneDNN issue #4845, fixed upstream in 2026; Debian 12 ships oneDNN 2.6.3).
#include <array>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <string>
#include <thread>

namespace rfa {

int stop_signal();  // the signal that asked for a stop while a StopSignals lives, 0 if none
inline bool stop_requested() { return stop_signal() != 0; }

// The stop signals, in the order StopSignals reports them (the first honoured one is the one to suggest).
inline constexpr std::array<int, 4> kStopSignals = {SIGTERM, SIGINT, SIGHUP, SIGUSR1};

class StopSignals {
 public:
  StopSignals();   // clears any earlier request
  ~StopSignals();  // restores the handlers and the calling thread's mask; clears the request
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // "" when no stop signal was inherited as ignored; else a sentence for the log naming those that
  // stay ignored and one that still stops the run ("SIGINT was inherited as ignored ...").
  std::string ignored_note() const;

 private:
  std::array<struct sigaction, kStopSignals.size()> old_{};  // as found, in kStopSignals order
  sigset_t old_mask_{};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool quit_ = false;
  std::thread watcher_;
};

}  // namespace rfa
