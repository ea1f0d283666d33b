// TeamBarrier: no thread passes a meeting before all have arrived, what each wrote before a meeting
// is seen by all after it, and a thread that arrives late (past the spinning, the others asleep)
// still wakes them.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "core/team_barrier.h"

using namespace rfa;

TEST_CASE("team barrier: every meeting waits for all the threads, and their writes are seen after it") {
  for (int threads : {1, 2, 3, 4}) {
    INFO(threads, " threads");
    constexpr int kMeetings = 2000;
    TeamBarrier barrier(threads);
    // Meeting m: each thread writes its slot with m, meets, then reads every slot (all must be m),
    // and meets again before the next write.
    std::vector<int> slots(static_cast<size_t>(threads), -1);
    std::vector<int> wrong(static_cast<size_t>(threads), 0);
    auto member = [&](int t) {
      for (int m = 0; m < kMeetings; ++m) {
        slots[size_t(t)] = m;
        barrier.wait();
        for (int u = 0; u < threads; ++u) wrong[size_t(t)] += slots[size_t(u)] != m;
        barrier.wait();
      }
    };
    std::vector<std::thread> team;
    for (int t = 1; t < threads; ++t) team.emplace_back(member, t);
    member(0);
    for (std::thread& th : team) th.join();
    for (int t = 0; t < threads; ++t) CHECK(wrong[size_t(t)] == 0);
  }
}

TEST_CASE("team barrier: a thread that comes long after the others' spinning ended wakes them") {
  TeamBarrier barrier(3);
  std::vector<std::chrono::steady_clock::time_point> passed(3);
  const auto start = std::chrono::steady_clock::now();
  auto member = [&](int t) {
    if (t == 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the others sleep by then
    barrier.wait();
    passed[size_t(t)] = std::chrono::steady_clock::now();
  };
  std::thread a(member, 1), b(member, 2);
  member(0);
  a.join();
  b.join();
  for (int t = 0; t < 3; ++t) CHECK(passed[size_t(t)] - start >= std::chrono::milliseconds(50));
}
