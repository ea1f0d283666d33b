#include "kernels/gemm_peak.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"
#include "kernels/bf16.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"

namespace rfa {

namespace {

// Times `product` (2 M N K flop) `repeats` times after two warm-up calls.
template <typename Product>
GemmPeak time_product(int64_t M, int64_t N, int64_t K, int repeats, Product&& product) {
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

void check_sizes(const char* what, int64_t M, int64_t N, int64_t K, int repeats) {
  if (M < 1 || N < 1 || K < 1) fail("{}: sizes M {} N {} K {} must all be at least 1", what, M, N, K);
  if (repeats < 1) fail("{}: repeats {} must be at least 1", what, repeats);
}

}  // namespace

GemmPeak gemm_peak(int64_t M, int64_t N, int64_t K, int repeats) {
  check_sizes("gemm_peak", M, N, K, repeats);
  std::vector<float> A(M * K), B(K * N), C(M * N);
  CounterRng rng(0x9e44, M, N, K);
  for (auto& a : A) a = static_cast<float>(rng.uniform() - 0.5);
  for (auto& b : B) b = static_cast<float>(rng.uniform() - 0.5);
  return time_product(M, N, K, repeats, [&] {
    gemm<float>(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N);
  });
}

GemmPeak gemm_peak_bf16(int64_t M, int64_t N, int64_t K, int repeats) {
  check_sizes("gemm_peak_bf16", M, N, K, repeats);
  bf16_require("the bf16 matmul peak", "measure the fp32 peak only on this machine");
  std::vector<float> A(M * K), B(K * N), C(M * N);
  CounterRng rng(0x9e44, M, N, K);
  for (auto& a : A) a = static_cast<float>(rng.uniform() - 0.5);
  for (auto& b : B) b = static_cast<float>(rng.uniform() - 0.5);
  std::vector<uint16_t> Ah(A.size()), Bh(B.size());
  bf16_from_float(Ah.data(), A.data(), M * K);
  bf16_from_float(Bh.data(), B.data(), K * N);
  return time_product(M, N, K, repeats, [&] {
    gemm_bf16(false, false, M, N, K, Ah.data(), K, Bh.data(), N, false, C.data(), N);
  });
}

}  // namespace rfa
