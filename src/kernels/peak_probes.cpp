#include "kernels/peak_probes.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "core/parallel.h"
#include "core/timer.h"
#include "kernels/vector_math.h"
#include "tensor/arena.h"

namespace rfa {
namespace {

// Independent accumulator chains per thread: more than latency x ports (4 x 2 on the
// cores we target) so the FMA units never wait, and with the multiplier and addend
// still inside 16 registers. The chains start at different values, so no compiler
// can merge them (identical chains once made a peak probe time a single chain).
constexpr int kChains = 12;
constexpr int64_t kInner = 256;  // multiply-adds per chain between loop tests

using V = Simd<float>::V;

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Runs `outer` x kInner x kChains vector multiply-adds; returns a value depending on all of them.
float fma_chains(int64_t outer, float seed) {
  V acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = V{} + (seed + float(c));
  const V mul = V{} + 0.9999f, add = V{} + 1e-4f;  // acc -> add / (1 - mul): no overflow, no denormals
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < kInner; ++i)
#pragma GCC unroll 12
      for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * mul + add;
  V sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum += acc[c];
  return simd_sum<float>(sum);
}

}  // namespace

FmaPeak fma_peak_measure(int repeats, double ms_per_repeat) {
  constexpr int W = Simd<float>::W;
  std::atomic<float> sink{0};
  // Calibrate on one thread: outer iterations for ms_per_repeat.
  int64_t outer = 16;
  for (;;) {
    Timer t;
    sink = sink + fma_chains(outer, 1.0f);
    if (t.ms() > ms_per_repeat / 4 || outer > (int64_t(1) << 30)) {
      outer = std::max<int64_t>(1, int64_t(double(outer) * ms_per_repeat / std::max(t.ms(), 1e-3)));
      break;
    }
    outer *= 4;
  }
  FmaPeak peak;
  peak.vector_floats = W;
  const double flop_per_thread = 2.0 * double(W) * kChains * kInner * double(outer);
  double best_s = 1e30, best_cpu_s = 1e30;
  for (int r = 0; r < repeats; ++r) {
    int threads = 1;
    std::atomic<double> fastest{1e30};  // the least CPU time a thread needed
    Timer t;
    parallel_region([&](int thread, int n) {
      if (thread == 0) threads = n;
      const double cpu0 = thread_cpu_seconds();
      const float v = fma_chains(outer, float(thread + r));
      const double cpu = thread_cpu_seconds() - cpu0;
      sink = sink + v;
      for (double f = fastest.load(); cpu < f && !fastest.compare_exchange_weak(f, cpu);) {
      }
    });
    best_s = std::min(best_s, t.seconds());
    best_cpu_s = std::min(best_cpu_s, fastest.load());
    peak.threads = threads;
  }
  peak.gflops = flop_per_thread * peak.threads / best_s / 1e9;
  peak.gflops_per_core = flop_per_thread / best_cpu_s / 1e9;
  if (sink.load() == 12345.678f) peak.gflops += 0;  // keeps the chains' results observable
  return peak;
}

BandwidthPeak bandwidth_peak_measure(int64_t bytes, int repeats) {
  const int64_t n = std::max<int64_t>(1024, bytes / int64_t(sizeof(float)));
  Arena<float> x(n), y(n);
  parallel_for(n, [&](int64_t i) { x.data()[i] = 1.0f, y.data()[i] = 0.5f; });  // first touch by the pool
  const int64_t block = 1 << 14;
  const int64_t blocks = (n + block - 1) / block;
  auto triad = [&] {
    parallel_for(blocks, [&](int64_t b) {
      float* __restrict yy = y.data() + b * block;
      const float* __restrict xx = x.data() + b * block;
      const int64_t m = std::min(block, n - b * block);
      for (int64_t i = 0; i < m; ++i) yy[i] = 0.999f * xx[i] + yy[i];
    });
  };
  triad();
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    Timer t;
    triad();
    best = std::min(best, t.seconds());
  }
  BandwidthPeak peak;
  peak.bytes = n * int64_t(sizeof(float));
  peak.gbs = 3.0 * double(peak.bytes) / best / 1e9;
  return peak;
}

double core_to_core_ns(int repeats, int round_trips) {
  if (thread_count() < 2 || round_trips < 1) return 0;
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    // Thread 0 writes an odd value and waits for thread 1's even answer: 2 hand-overs a trip.
    alignas(64) std::atomic<int64_t> flag{0};
    double seconds = 0;
    parallel_region([&](int t, int nt) {
      if (nt < 2) return;  // (a region given fewer threads: no partner to wait for)
      if (t == 0) {
        Timer timer;
        for (int64_t i = 0; i < round_trips; ++i) {
          flag.store(2 * i + 1, std::memory_order_release);
          while (flag.load(std::memory_order_acquire) != 2 * i + 2) {
          }
        }
        seconds = timer.seconds();
      } else if (t == 1) {
        for (int64_t i = 0; i < round_trips; ++i) {
          while (flag.load(std::memory_order_acquire) != 2 * i + 1) {
          }
          flag.store(2 * i + 2, std::memory_order_release);
        }
      }
    });
    best = std::min(best, seconds / (2.0 * round_trips));
  }
  return best > 0 && best < 1e30 ? best * 1e9 : 0;
}

}  // namespace rfa
