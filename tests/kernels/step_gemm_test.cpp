// step_gemm: every output element is the one multiply-add chain in k order the header promises,
// bit for bit, whatever the number of rows, a row's place among them, the tile it falls in and the
// threads (batch invariance, kernels/step_gemm.h); for both weight layouts and every tail of K, N
// and M; a group of products sharing x gives each step_gemm's own bits; and the double path is
// the product.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/rng.h"
#include "kernels/gemm.h"
#include "kernels/step_gemm.h"
#include "support/fork_factor.h"
#include "tensor/arena.h"

using namespace rfa;

namespace {

template <typename T>
std::vector<T> filled(size_t n, uint64_t seed) {
  std::vector<T> v(n);
  CounterRng rng(seed);
  for (T& f : v) f = static_cast<T>(rng.normal());
  return v;
}

// s + a b as the kernel's vector multiply-add rounds it: fused where the target has FMA.
float multiply_add(float s, float a, float b) {
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
  return std::fma(a, b, s);
#else
  return s + a * b;
#endif
}

// W (N, K) or (K, N) element (n, k).
template <typename T>
T weight(const std::vector<T>& W, bool trans, int64_t N, int64_t K, int64_t n, int64_t k) {
  return trans ? W[size_t(n * K + k)] : W[size_t(k * N + n)];
}

}  // namespace

TEST_CASE("step_gemm: each element is the k-order chain, bit for bit, for every M, place, tile and thread count") {
  constexpr int64_t kRowsMax = 70;
  for (bool trans : {true, false})
    for (int64_t K : {1, 5, 16, 37, 384})
      for (int64_t N : {1, 3, 17, 64, 65, 129, 300}) {
        CAPTURE(trans);
        CAPTURE(K);
        CAPTURE(N);
        const std::vector<float> x = filled<float>(size_t(kRowsMax * K), 1), W = filled<float>(size_t(N * K), 2),
                                 base = filled<float>(size_t(kRowsMax * N), 3);
        Arena<float> packed(step_packed_size<float>(N, K));  // 64-byte aligned, as the decoder's
        step_pack<float>(trans, N, K, W.data(), packed.data());
        // The chain in scalar code, written and added to base.
        std::vector<float> chain(size_t(kRowsMax * N)), chain_acc(size_t(kRowsMax * N));
        for (int64_t m = 0; m < kRowsMax; ++m)
          for (int64_t n = 0; n < N; ++n) {
            float s = 0;
            for (int64_t k = 0; k < K; ++k) s = multiply_add(s, x[size_t(m * K + k)], weight(W, trans, N, K, n, k));
            chain[size_t(m * N + n)] = s;
            chain_acc[size_t(m * N + n)] = base[size_t(m * N + n)] + s;
          }
        for (int64_t M : {1, 2, 3, 4, 5, 6, 7, 9, 13, 16, 17, 24, 25, 31, 64, 70})
          for (GemmThreads th : {GemmThreads::one, GemmThreads::pool})
            for (WeightsFrom from : {WeightsFrom::cache, WeightsFrom::memory})  // (memory: the next panel prefetched)
            for (int64_t first : {int64_t(0), kRowsMax - M}) {  // the rows from another place among all 70
              CAPTURE(M);
              CAPTURE(first);
              CAPTURE(from == WeightsFrom::memory);
              std::vector<float> out(size_t(M * N), NAN), acc(base.begin() + first * N, base.begin() + (first + M) * N);
              step_gemm<float>(M, N, K, x.data() + first * K, packed.data(), out.data(), false, th, from);
              step_gemm<float>(M, N, K, x.data() + first * K, packed.data(), acc.data(), true, th, from);
              REQUIRE(std::memcmp(out.data(), chain.data() + first * N, sizeof(float) * size_t(M * N)) == 0);
              REQUIRE(std::memcmp(acc.data(), chain_acc.data() + first * N, sizeof(float) * size_t(M * N)) == 0);
            }
      }
}

TEST_CASE("step_gemm_group: each product's elements are step_gemm's bits, for every M, group size and thread count") {
  // 3 x 384 x 384 is the q, k, v of a 6x384 model: one row of it forks, one product alone does not.
  for (int64_t K : {37, 384})
    for (int64_t N : {65, 384}) {
      CAPTURE(K);
      CAPTURE(N);
      constexpr int64_t kGroupMax = 3, kRowsMax = 64;
      const std::vector<float> x = filled<float>(size_t(kRowsMax * K), 7);
      std::vector<Arena<float>> packed;
      for (int64_t g = 0; g < kGroupMax; ++g) {
        const std::vector<float> W = filled<float>(size_t(N * K), 8 + uint64_t(g));
        packed.emplace_back(step_packed_size<float>(N, K));
        step_pack<float>(true, N, K, W.data(), packed.back().data());
      }
      for (int64_t M : {1, 2, 7, 16, 24, 64})
        for (int64_t G = 1; G <= kGroupMax; ++G)
          for (GemmThreads th : {GemmThreads::one, GemmThreads::pool})
          for (WeightsFrom from : {WeightsFrom::cache, WeightsFrom::memory}) {
            CAPTURE(M);
            CAPTURE(G);
            CAPTURE(from == WeightsFrom::memory);
            std::vector<std::vector<float>> out, alone;
            std::vector<StepProduct<float>> group;
            out.reserve(size_t(G));
            for (int64_t g = 0; g < G; ++g) {
              out.emplace_back(size_t(M * N), NAN);
              alone.emplace_back(size_t(M * N), NAN);
              step_gemm<float>(M, N, K, x.data(), packed[size_t(g)].data(), alone.back().data(), false,
                               GemmThreads::one);
              group.push_back({packed[size_t(g)].data(), out.back().data()});
            }
            step_gemm_group<float>(M, N, K, x.data(), group, false, th, from);
            for (int64_t g = 0; g < G; ++g)
              REQUIRE(std::memcmp(out[size_t(g)].data(), alone[size_t(g)].data(), sizeof(float) * size_t(M * N)) == 0);
            step_gemm_group<float>(M, N, K, x.data(), group, true, th, from);  // out = 2 (x W) exactly
            for (int64_t g = 0; g < G; ++g)
              for (int64_t i = 0; i < M * N; ++i) REQUIRE(out[size_t(g)][size_t(i)] == 2 * alone[size_t(g)][size_t(i)]);
          }
    }
}

TEST_CASE("step_gemm: the packed copy's size is whole panels of whole registers; double is the product") {
  const int64_t P = step_panel_columns<float>();
  CHECK(P % 8 == 0);
  CHECK(step_packed_size<float>(P, 3) == P * 3);
  CHECK(step_packed_size<float>(P + 1, 3) >= (P + 1) * 3);
  CHECK(step_packed_size<float>(P + 1, 3) <= (P + 16) * 3);
  for (bool trans : {true, false})
    for (int64_t N : {1, 65, 300}) {
      constexpr int64_t M = 5, K = 37;
      const std::vector<double> x = filled<double>(M * K, 4), W = filled<double>(size_t(N * K), 5);
      std::vector<double> packed(size_t(step_packed_size<double>(N, K))), out(size_t(M * N)), ref(size_t(M * N));
      step_pack<double>(trans, N, K, W.data(), packed.data());
      step_gemm<double>(M, N, K, x.data(), packed.data(), out.data(), false, GemmThreads::pool);
      gemm_reference<double>(false, trans, M, N, K, 1.0, x.data(), K, W.data(), trans ? K : N, 0.0, ref.data(), N);
      for (size_t i = 0; i < ref.size(); ++i) CHECK(std::abs(out[i] - ref[i]) <= 1e-12 * (1 + std::abs(ref[i])));
    }
}

// A tied embedding whose stored copy a decoder released reads its rows back from the LM head's
// packed copy: exactly W's rows, in the first, a middle and the last (partial) panel, on one
// thread and forked.
TEST_CASE("step_packed_rows: rows of W read back from its packed copy, bit for bit") {
  const int64_t P = step_panel_columns<float>();
  for (int64_t N : {int64_t(1), P, 2 * P + 3})
    for (double factor : {64.0, 0.0}) {
      CAPTURE(N);
      CAPTURE(factor);
      const test::ForkFactorScope fork(2, factor);
      constexpr int64_t K = 37;
      const std::vector<float> W = filled<float>(size_t(N * K), 6);
      std::vector<float> packed(size_t(step_packed_size<float>(N, K)));
      step_pack<float>(true, N, K, W.data(), packed.data());
      std::vector<int32_t> rows;
      for (int64_t r : {int64_t(0), N - 1, N / 2, P - 1, P, N - 2})
        if (r >= 0 && r < N) rows.push_back(static_cast<int32_t>(r));
      std::vector<float> out(rows.size() * size_t(K), -1.0f);
      step_packed_rows<float>(packed.data(), N, K, rows.data(), int64_t(rows.size()), out.data());
      for (size_t i = 0; i < rows.size(); ++i)
        CHECK(std::memcmp(out.data() + i * K, W.data() + rows[i] * K, sizeof(float) * K) == 0);
      const int32_t outside = static_cast<int32_t>(N);
      CHECK_THROWS(step_packed_rows<float>(packed.data(), N, K, &outside, 1, out.data()));
    }
}
