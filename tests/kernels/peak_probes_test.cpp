#include <doctest/doctest.h>

#include <cmath>

#include "core/parallel.h"
#include "kernels/peak_probes.h"
#include "kernels/vector_math.h"

using namespace rfa;

TEST_CASE("peak probes: fma a positive rate per core and over the pool, with the build's width") {
  const FmaPeak p = fma_peak_measure(2, 2.0);
  CHECK(p.vector_floats == Simd<float>::W);
  CHECK(p.threads == thread_count());
  CHECK(std::isfinite(p.gflops));
  CHECK(p.gflops > 0);
  CHECK(p.gflops_per_core > 0);
  // A core's rate cannot exceed one instruction's lanes at 2 flops x 4 FMAs a cycle at 10 GHz.
  CHECK(p.gflops_per_core < 2.0 * p.vector_floats * 4 * 10.0);
}

TEST_CASE("bandwidth peak: both buffers of the asked size, a positive rate") {
  const BandwidthPeak b = bandwidth_peak_measure(int64_t(1) << 20, 2);
  CHECK(b.bytes == (int64_t(1) << 20));
  CHECK(std::isfinite(b.gbs));
  CHECK(b.gbs > 0);
  CHECK(bandwidth_peak_measure(16, 1).bytes == 1024 * 4);  // at least 1024 floats
}

TEST_CASE("core-to-core distance: a positive time with two threads, 0 with one") {
  const int before = thread_count();
  thread_count_set(2);
  const double ns = core_to_core_ns(2, 2000);
  CHECK(ns > 0);     // a hand-over takes time
  CHECK(ns < 1e6);   // and not a millisecond (a trip's two hand-overs are each counted once)
  thread_count_set(1);
  CHECK(core_to_core_ns(2, 2000) == 0);
  thread_count_set(before);
}
