#pragma once
// The vector FMA throughput of this build's own kernels (kernels/vector_math.h's
// register width, RFA_ARCH), measured: the roof that `rfa bench train --profile`
// holds each hand-written kernel against. oneDNN's sgemm may run wider or
// narrower vectors (it chooses at run time, capped by kernels/cpu_target.h).
namespace rfa {

struct FmaPeak {
  int threads = 0;
  int vector_floats = 0;    // floats per register of the build (16 AVX-512, 8 AVX2, 4 SSE/NEON)
  double gflops = 0;        // all threads together by wall time, best of the repeats
  double gflops_per_core = 0;  // per second of a thread's own CPU time, best thread of the best repeat:
                               // a core's peak even on a shared machine
};

// Every thread of the pool runs independent chains of multiply-adds on
// registers for about `ms_per_repeat` ms, `repeats` times; the best repeat counts.
FmaPeak fma_peak_measure(int repeats = 5, double ms_per_repeat = 30);

}  // namespace rfa
