#include "kernels/gemm_peak.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"
#include "kernels/gemm.h"

namespace rfa {

GemmPeak gemm_peak(int64_t M, int64_t N, int64_t K, int repeats) {
  if (M < 1 || N < 1 || K < 1) fail("gemm_peak: sizes M {} N {} K {} must all be at least 1", M, N, K);
  if (repeats < 1) fail("gemm_peak: repeats {} must be at least 1", repeats);
  std::vector<float> A(M * K), B(K * N), C(M * N);
  CounterRng rng(0x9e44, M, N, K);
  for (auto& a : A) a = static_cast<float>(rng.uniform() - 0.5);
  for (auto& b : B) b = static_cast<float>(rng.uniform() - 0.5);
  auto product = [&] { gemm<float>(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N); };
  product();  // warm-up: first-touch of C, oneDNN's kernel selection, thread start
  product();
  std::vector<double> ms(repeats);
  for (int r = 0; r < repeats; ++r) {
    Timer timer;
    product();
    ms[r] = timer.ms();
  }
  std::sort(ms.begin(), ms.end());
  GemmPeak peak;
  peak.M = M, peak.N = N, peak.K = K;
  peak.repeats = repeats;
  peak.ms_median = ms[repeats / 2];
  peak.ms_best = ms[0];
  double flop = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  peak.gflops_median = flop / (peak.ms_median * 1e6);
  peak.gflops_best = flop / (peak.ms_best * 1e6);
  return peak;
}

}  // namespace rfa
