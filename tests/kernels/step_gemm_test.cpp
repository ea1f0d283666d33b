// step_gemm: a row's outputs are the same bits whatever the number of rows beside it, its
// place among them and the threads (batch invariance, kernels/step_gemm.h), and they are the
// product (against gemm_reference), for both weight layouts and every tail of K, N and M.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/rng.h"
#include "kernels/gemm.h"
#include "kernels/step_gemm.h"

using namespace rfa;

namespace {

std::vector<float> filled(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  CounterRng rng(seed);
  for (float& f : v) f = static_cast<float>(rng.normal());
  return v;
}

}  // namespace

TEST_CASE("step_gemm: every row equals the same row computed alone, bit for bit; and the product") {
  constexpr int64_t kRowsMax = 70;
  for (bool trans : {true, false})
    for (int64_t K : {1, 5, 16, 37, 128, 384})
      for (int64_t N : {1, 3, 17, 64, 65, 300}) {
        CAPTURE(trans);
        CAPTURE(K);
        CAPTURE(N);
        const std::vector<float> x = filled(size_t(kRowsMax * K), 1), W = filled(size_t(N * K), 2),
                                 base = filled(size_t(kRowsMax * N), 3);
        // Each row alone, one thread, written and accumulated.
        std::vector<float> alone(size_t(kRowsMax * N)), alone_acc = base;
        for (int64_t r = 0; r < kRowsMax; ++r) {
          step_gemm<float>(trans, 1, N, K, x.data() + r * K, W.data(), alone.data() + r * N, false, GemmThreads::one);
          step_gemm<float>(trans, 1, N, K, x.data() + r * K, W.data(), alone_acc.data() + r * N, true,
                           GemmThreads::one);
        }
        std::vector<float> ref(size_t(kRowsMax * N));
        gemm_reference<float>(false, trans, kRowsMax, N, K, 1.0f, x.data(), K, W.data(), trans ? K : N, 0.0f,
                              ref.data(), N);
        for (size_t i = 0; i < ref.size(); ++i)
          REQUIRE(std::abs(alone[i] - ref[i]) <= 1e-5f * (1.0f + std::abs(ref[i])) * std::sqrt(float(K)));
        for (int64_t M : {2, 3, 4, 5, 7, 9, 16, 17, 33, 64, 70})
          for (GemmThreads th : {GemmThreads::one, GemmThreads::pool}) {
            CAPTURE(M);
            std::vector<float> out(size_t(M * N), NAN), acc(base.begin(), base.begin() + M * N);
            step_gemm<float>(trans, M, N, K, x.data(), W.data(), out.data(), false, th);
            step_gemm<float>(trans, M, N, K, x.data(), W.data(), acc.data(), true, th);
            CHECK(std::memcmp(out.data(), alone.data(), sizeof(float) * size_t(M * N)) == 0);
            CHECK(std::memcmp(acc.data(), alone_acc.data(), sizeof(float) * size_t(M * N)) == 0);
          }
      }
}
