#pragma once
// The roofs that `rfa bench train --profile` holds each kernel against, measured in
// the same process: the vector FMA throughput of this build's own kernels
// (kernels/simd.h's register width, RFA_ARCH; oneDNN's sgemm chooses its own
// vectors at run time, capped by kernels/cpu_target.h), and the memory bandwidth a
// row kernel can reach. Each allocates its own buffers: not for a training step.
#include <cstdint>

namespace rfa {

struct FmaPeak {
  int threads = 0;
  int vector_floats = 0;       // floats per register of the build (16 AVX-512, 8 AVX2, 4 SSE/NEON)
  double gflops = 0;           // all threads together by wall time, best of the repeats
  double gflops_per_core = 0;  // per second of a thread's own CPU time, best thread of the best repeat:
                               // a core's peak even on a shared machine
};

// Every thread of the pool runs independent chains of multiply-adds on
// registers for about `ms_per_repeat` ms, `repeats` times; the best repeat counts.
FmaPeak fma_peak_measure(int repeats = 5, double ms_per_repeat = 30);

struct BandwidthPeak {
  int64_t bytes = 0;  // of each of the two buffers
  double gbs = 0;     // bytes read plus written per second over the pool, best of the repeats
};

// y = a x + y over two float buffers of `bytes` each, split over the pool as the row
// kernels split their rows (2 reads and 1 write per element): what a bandwidth-bound
// kernel over tensors of that size can reach (in cache for small ones, DRAM for large).
BandwidthPeak bandwidth_peak_measure(int64_t bytes, int repeats = 5);

// How far apart the pool's first two threads' cores are: the one-way time of handing a cache line
// from one to the other (a flag bounced `round_trips` times, best of `repeats`), in ns; 0 with
// one thread. About 20-60 ns between cores sharing a last-level cache, 100-250 ns across dies
// or where a VM's cores land apart; the same machine can change between runs (a VM's cores are
// moved). Every product and row kernel hands rows between the threads, so results measured at
// different distances do not compare: `rfa bench train` prints it (docs/cpu-targets.md).
double core_to_core_ns(int repeats = 3, int round_trips = 20000);

}  // namespace rfa
