#pragma once
// SIGINT/SIGTERM (and SIGUSR1, which Open MPI's mpirun forwards to every rank while it
// kills the job on SIGTERM/SIGINT; and SIGHUP, a closed terminal, unless the process
// inherited it ignored, as under nohup) as a request to stop, for long runs (`rfa train`). While a
// StopSignals lives, the first of them sets a process-wide flag that
// long loops poll with stop_requested() at points where stopping loses nothing
// (between micro-batches, between evaluation batches); a second one kills the
// process the default way (exit status 128 + signal).
//
// Only a watcher thread ever runs the handler: the constructor blocks both
// signals in the calling thread and in the OpenMP workers. A handler run on a
// compute thread can corrupt the heap: oneDNN's JIT sgemm kernels point rsp at
// a heap workspace while they run, and the kernel pushes the signal frame at rsp
// (oneDNN issue #4845, fixed upstream in 2026; Debian 12 ships oneDNN 2.6.3).
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <thread>

namespace rfa {

int stop_signal();  // the signal that asked for a stop while a StopSignals lives, 0 if none
inline bool stop_requested() { return stop_signal() != 0; }

class StopSignals {
 public:
  StopSignals();   // clears any earlier request
  ~StopSignals();  // restores the handlers and the calling thread's mask; clears the request
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_usr1_ {};
  struct sigaction old_hup_ {};
  sigset_t old_mask_{};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool quit_ = false;
  std::thread watcher_;
};

}  // namespace rfa
