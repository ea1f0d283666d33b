#pragma once
// A barrier for the threads of one parallel region that meet often and arrive close together (a
// decode step's team: about 8 meetings a layer, each after a share of equal work). It spins a
// while before it sleeps: an OpenMP barrier under OMP_WAIT_POLICY=passive sleeps in the kernel at
// once, and its wake-up cost what a product of a few dozen rows takes. The sleep (std::atomic
// wait: a futex on Linux) bounds what a late thread costs the cores the others share with another
// process.
#include <atomic>
#include <chrono>
#include <cstdint>

namespace rfa {

class TeamBarrier {
 public:
  explicit TeamBarrier(int threads) : threads_(threads) {}
  TeamBarrier(const TeamBarrier&) = delete;
  TeamBarrier& operator=(const TeamBarrier&) = delete;

  // Returns when all `threads` have called it (for this meeting); what each wrote before is
  // visible to all after.
  void wait() {
    const uint32_t generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      generation_.notify_all();
      return;
    }
    const auto spin_end = std::chrono::steady_clock::now() + kSpin;
    for (int i = 1;; ++i) {
      if (generation_.load(std::memory_order_acquire) != generation) return;
      pause();
      if (i % 32 == 0 && std::chrono::steady_clock::now() >= spin_end) break;  // a clock read per ~1 µs
    }
    while (generation_.load(std::memory_order_acquire) == generation) generation_.wait(generation, std::memory_order_acquire);
  }

 private:
  // Spinning for up to 50 µs before sleeping: about what waking a sleeping thread costs under
  // passive waiting on a VM (25-90 µs, core/parallel.h), well above a meeting's usual wait (its
  // members' shares are equal), and short beside a product for a thread descheduled meanwhile.
  static constexpr std::chrono::microseconds kSpin{50};
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  const int threads_;
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};
};

}  // namespace rfa
