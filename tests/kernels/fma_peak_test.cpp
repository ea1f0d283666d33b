#include <doctest/doctest.h>

#include <cmath>

#include "core/parallel.h"
#include "kernels/fma_peak.h"
#include "kernels/vector_math.h"

using namespace rfa;

TEST_CASE("fma peak: a positive rate per core and over the pool, with the build's width") {
  const FmaPeak p = fma_peak_measure(2, 2.0);
  CHECK(p.vector_floats == Simd<float>::W);
  CHECK(p.threads == thread_count());
  CHECK(std::isfinite(p.gflops));
  CHECK(p.gflops > 0);
  CHECK(p.gflops_per_core > 0);
  // A core's rate cannot exceed one instruction's lanes at 2 flops x 4 FMAs a cycle at 10 GHz.
  CHECK(p.gflops_per_core < 2.0 * p.vector_floats * 4 * 10.0);
}
