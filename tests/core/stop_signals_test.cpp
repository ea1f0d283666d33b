// SIGINT/SIGTERM as a stop request: the request is seen, compute threads (this
// one and the OpenMP workers) never run the handler because they block both
// signals, and everything is restored when the StopSignals goes.
#include <doctest/doctest.h>
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "core/parallel.h"
#include "core/stop_signals.h"

using namespace rfa;

namespace {

bool blocked_here(int sig) {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, sig) == 1;
}

void (*handler_of(int sig))(int) {
  struct sigaction now {};
  sigaction(sig, nullptr, &now);
  return now.sa_handler;
}

// Polls for up to 10 s: the watcher thread takes the signal asynchronously.
bool wait_for_request() {
  for (int i = 0; i < 1000 && !stop_requested(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return stop_requested();
}

}  // namespace

TEST_CASE("stop signals: compute threads block SIGINT/SIGTERM; a process-directed SIGTERM is a request") {
  REQUIRE_FALSE(blocked_here(SIGTERM));
  auto* const before = handler_of(SIGTERM);
  {
    StopSignals signals;
    CHECK_FALSE(stop_requested());
    CHECK(blocked_here(SIGINT));
    CHECK(blocked_here(SIGTERM));
    std::vector<int> worker_blocks(static_cast<size_t>(thread_count()), -1);
    parallel_region([&](int t, int) { worker_blocks[static_cast<size_t>(t)] = blocked_here(SIGINT) && blocked_here(SIGTERM); });
    for (int b : worker_blocks) CHECK(b == 1);

    REQUIRE(kill(getpid(), SIGTERM) == 0);
    CHECK(wait_for_request());
    CHECK(stop_signal() == SIGTERM);
  }
  CHECK_FALSE(stop_requested());  // a request ends with its StopSignals
  CHECK_FALSE(blocked_here(SIGTERM));
  CHECK((handler_of(SIGTERM) == before));
}

TEST_CASE("stop signals: SIGINT is a request too, and a new StopSignals starts clear") {
  {
    StopSignals signals;
    REQUIRE(kill(getpid(), SIGINT) == 0);
    CHECK(wait_for_request());
    CHECK(stop_signal() == SIGINT);
  }
  StopSignals again;
  CHECK_FALSE(stop_requested());
}

TEST_CASE("stop signals: SIGHUP (a closed terminal) is a request") {
  auto* const before = handler_of(SIGHUP);
  {
    StopSignals signals;
    CHECK(signals.ignored_note().empty());
    REQUIRE(kill(getpid(), SIGHUP) == 0);  // killed the trainer without a checkpoint
    CHECK(wait_for_request());
    CHECK(stop_signal() == SIGHUP);
  }
  CHECK((handler_of(SIGHUP) == before));
}

TEST_CASE("stop signals: every stop signal inherited as ignored stays ignored (nohup, a script's background job)") {
  // SIGINT was taken anyway (train stopped where generate kept the ignore); SIGHUP was the only one kept.
  for (int sig : kStopSignals) {
    CAPTURE(sig);
    struct sigaction ignore {}, old {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    REQUIRE(sigaction(sig, &ignore, &old) == 0);
    {
      StopSignals signals;
      CHECK((handler_of(sig) == SIG_IGN));
      REQUIRE(kill(getpid(), sig) == 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      CHECK_FALSE(stop_requested());
      const std::string note = signals.ignored_note();
      CHECK(note.find("inherited as ignored") != std::string::npos);
      // Another signal still stops the run, and the note says which.
      const int other = sig == SIGTERM ? SIGINT : SIGTERM;
      CHECK(note.find(std::string("(kill -") + (other == SIGTERM ? "TERM " : "INT ")) != std::string::npos);
      REQUIRE(kill(getpid(), other) == 0);
      CHECK(wait_for_request());
      CHECK(stop_signal() == other);
    }
    CHECK((handler_of(sig) == SIG_IGN));
    sigaction(sig, &old, nullptr);
  }
}
