#include "kernels/gemm_peak.h"

#include <doctest/doctest.h>

#include <cmath>

#include "core/error.h"
#include "kernels/bf16.h"

// No speed threshold here (timed tests are flaky on a shared machine): this
// checks the bookkeeping only.
TEST_CASE("gemm peak: reports consistent, positive timings and rejects bad sizes") {
  rfa::GemmPeak peak = rfa::gemm_peak(64, 48, 32, 5);
  CHECK(peak.M == 64);
  CHECK(peak.N == 48);
  CHECK(peak.K == 32);
  CHECK(peak.repeats == 5);
  CHECK(peak.ms_best > 0);
  CHECK(peak.ms_best <= peak.ms_median);
  CHECK(peak.gflops_best >= peak.gflops_median);
  CHECK(peak.gflops_median == doctest::Approx(2.0 * 64 * 48 * 32 / (peak.ms_median * 1e6)));
  CHECK(std::isfinite(peak.gflops_best));
  CHECK_THROWS_AS(rfa::gemm_peak(0, 8, 8), rfa::Error);
  CHECK_THROWS_AS(rfa::gemm_peak(8, 8, 8, 0), rfa::Error);
}

TEST_CASE("gemm_peak_bf16: times the bf16 product of the given shape") {
  if (!rfa::bf16_native()) {
    CHECK_THROWS_AS(rfa::gemm_peak_bf16(64, 48, 32, 5), rfa::Error);
    MESSAGE("no AVX512-BF16: checked the refusal only");
    return;
  }
  rfa::GemmPeak peak = rfa::gemm_peak_bf16(64, 48, 32, 5);
  CHECK(peak.M == 64);
  CHECK(peak.repeats == 5);
  CHECK(peak.ms_best <= peak.ms_median);
  CHECK(peak.gflops_best >= peak.gflops_median);
  CHECK(peak.gflops_median > 0);
}
