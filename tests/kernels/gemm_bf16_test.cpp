#include "kernels/gemm_bf16.h"

#include <doctest/doctest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/bf16.h"
#include "support/gradcheck.h"
#include "support/skip.h"
#include "tensor/arena.h"

using rfa::test::check_close;
using rfa::test::random_vector;

namespace {

std::vector<uint16_t> to_bf16(const std::vector<float>& x) {
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = rfa::bf16_from_float_reference(x[i]);
  return h;
}

// gemm_bf16 against the float product of the same bf16-rounded operands, with
// padded leading dimensions (lda != K) and the padding of C checked untouched.
void check_bf16_shape(bool ta, bool tb, int64_t M, int64_t N, int64_t K, bool accumulate) {
  const int64_t a_rows = ta ? K : M, a_cols = ta ? M : K;
  const int64_t b_rows = tb ? N : K, b_cols = tb ? K : N;
  const int64_t lda = a_cols + 3, ldb = b_cols + 5, ldc = N + 2;
  const auto A = to_bf16(random_vector<float>(size_t(a_rows * lda), 1 + M));
  const auto B = to_bf16(random_vector<float>(size_t(b_rows * ldb), 2 + N));
  const auto C0 = random_vector<float>(size_t(M * ldc), 3 + K);
  auto fast = C0, ref = C0;
  rfa::gemm_bf16(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, accumulate, fast.data(), ldc);
  rfa::gemm_bf16_reference(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, accumulate, ref.data(), ldc);
  INFO("trans_a ", ta, " trans_b ", tb, " M ", M, " N ", N, " K ", K, " accumulate ", accumulate);
  // Products of bf16 values are exact in float; only the f32 sums round.
  const double atol = 1e-5 * std::sqrt(static_cast<double>(K) + 1) * 4;
  check_close("gemm_bf16 vs float product of the rounded operands", fast.data(), ref.data(), fast.size(), 1e-5,
              atol);
  bool padding_kept = true;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = N; j < ldc; ++j) padding_kept = padding_kept && fast[size_t(i * ldc + j)] == C0[size_t(i * ldc + j)];
  CHECK(padding_kept);
}

}  // namespace

TEST_CASE("gemm_bf16: every layout training uses, overwrite and accumulate, against the rounded float product") {
  if (rfa::test::skip_if(!rfa::bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  const int64_t sizes[] = {1, 17, 130};
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t M : sizes)
        for (int64_t N : sizes)
          for (int64_t K : sizes)
            for (bool acc : {false, true}) check_bf16_shape(ta, tb, M, N, K, acc);
  // The training layouts at a realistic size: A·Bᵀ (forward), A·B (dX), Aᵀ·B (dW).
  check_bf16_shape(false, true, 512, 384, 384, false);
  check_bf16_shape(false, false, 512, 384, 1024, true);
  check_bf16_shape(true, false, 384, 384, 512, true);
}

TEST_CASE("gemm_bf16: a repeated product creates no new primitive; one thread gets its own; K 0 and NaN in C") {
  if (rfa::test::skip_if(!rfa::bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  const auto A = to_bf16(random_vector<float>(9 * 7, 4)), B = to_bf16(random_vector<float>(7 * 11, 5));
  std::vector<float> C(9 * 11, NAN), ref(9 * 11);
  rfa::gemm_bf16(false, false, 9, 11, 7, A.data(), 7, B.data(), 11, false, C.data(), 11);
  const int64_t created = rfa::gemm_bf16_primitive_count();
  rfa::gemm_bf16(false, false, 9, 11, 7, A.data(), 7, B.data(), 11, false, C.data(), 11);
  CHECK(rfa::gemm_bf16_primitive_count() == created);
  rfa::gemm_bf16_reference(false, false, 9, 11, 7, A.data(), 7, B.data(), 11, false, ref.data(), 11);
  check_close("overwrite over NaN", C.data(), ref.data(), C.size(), 1e-5, 1e-5);
  std::vector<float> one(9 * 11, NAN);
  rfa::gemm_bf16(false, false, 9, 11, 7, A.data(), 7, B.data(), 11, false, one.data(), 11, rfa::GemmThreads::one);
  CHECK(rfa::gemm_bf16_primitive_count() == created + 1);
  check_close("one thread", one.data(), ref.data(), one.size(), 1e-5, 1e-5);
  std::vector<float> D(6, 2.0f);
  rfa::gemm_bf16(false, false, 2, 3, 0, A.data(), 1, B.data(), 3, true, D.data(), 3);
  for (float d : D) CHECK(d == 2.0f);
  rfa::gemm_bf16(false, false, 2, 3, 0, A.data(), 1, B.data(), 3, false, D.data(), 3);
  for (float d : D) CHECK(d == 0.0f);
}

TEST_CASE("gemm_bf16_packed: few rows against a packed B in column parts equal the plain product, both layouts, accumulate") {
  if (rfa::test::skip_if(!rfa::bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  for (bool tb : {false, true})
    for (int64_t M : {1, 3})
      for (bool acc : {false, true})
        for (int parts : {1, 2, 3}) {
          const int64_t N = 96, K = 80;
          const auto A = to_bf16(random_vector<float>(size_t(M * K), 6));
          const auto B = to_bf16(random_vector<float>(size_t(K * N), 7));  // (K, N), or (N, K) when tb
          const auto C0 = random_vector<float>(size_t(M * N), 8);
          std::vector<rfa::Arena<uint8_t>> blocks;
          std::vector<const void*> packed;
          int64_t columns = 0;
          for (int p = 0; p < parts; ++p) {
            const int64_t n = rfa::gemm_bf16_part_begin(N, p + 1, parts) - rfa::gemm_bf16_part_begin(N, p, parts);
            CHECK(n > 0);
            columns += n;
            const int64_t bytes = rfa::gemm_bf16_packed_bytes(tb, M, N, K, acc, p, parts);
            REQUIRE(bytes >= K * n * 2);
            blocks.emplace_back(bytes);
            rfa::gemm_bf16_pack(tb, M, N, K, acc, B.data(), tb ? K : N, p, parts, blocks.back().data());
            packed.push_back(blocks.back().data());
          }
          CHECK(columns == N);
          auto fast = C0, ref = C0;
          rfa::gemm_bf16_packed(tb, M, N, K, acc, A.data(), packed.data(), parts, fast.data());
          rfa::gemm_bf16_reference(false, tb, M, N, K, A.data(), K, B.data(), tb ? K : N, acc, ref.data(), N);
          INFO("trans_b ", tb, " M ", M, " accumulate ", acc, " parts ", parts);
          check_close("packed vs reference", fast.data(), ref.data(), fast.size(), 1e-5, 1e-4);
          // Inside a parallel region (a thread of the batch split) every part runs on the caller.
          auto inside = C0;
#pragma omp parallel num_threads(2)
          {
#pragma omp single
            rfa::gemm_bf16_packed(tb, M, N, K, acc, A.data(), packed.data(), parts, inside.data());
          }
          CHECK(inside == fast);
        }
}

TEST_CASE("gemm_bf16_packed_group: three products in one pass give each one's bits alone (the decode step's q, k, v)") {
  if (rfa::test::skip_if(!rfa::bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  for (int64_t M : {1, 5})
    for (bool acc : {false, true})
      for (int parts : {1, 2, 3}) {
        const int64_t N = 96, K = 80;
        const auto A = to_bf16(random_vector<float>(size_t(M * K), 16));
        std::vector<rfa::Arena<uint8_t>> blocks;
        std::vector<std::vector<const void*>> packed(3);
        std::vector<std::vector<float>> alone(3), together(3);
        for (int g = 0; g < 3; ++g) {
          const auto B = to_bf16(random_vector<float>(size_t(K * N), 17 + uint64_t(g)));  // (N, K)
          for (int p = 0; p < parts; ++p) {
            blocks.emplace_back(rfa::gemm_bf16_packed_bytes(true, M, N, K, acc, p, parts));
            rfa::gemm_bf16_pack(true, M, N, K, acc, B.data(), K, p, parts, blocks.back().data());
            packed[size_t(g)].push_back(blocks.back().data());
          }
          alone[size_t(g)] = together[size_t(g)] = random_vector<float>(size_t(M * N), 20 + uint64_t(g));
          rfa::gemm_bf16_packed(true, M, N, K, acc, A.data(), packed[size_t(g)].data(), parts, alone[size_t(g)].data());
        }
        const rfa::Bf16Product group[] = {{packed[0].data(), together[0].data()},
                                          {packed[1].data(), together[1].data()},
                                          {packed[2].data(), together[2].data()}};
        rfa::gemm_bf16_packed_group(true, M, N, K, acc, A.data(), group, parts);
        INFO("M ", M, " accumulate ", acc, " parts ", parts);
        for (int g = 0; g < 3; ++g) CHECK(together[size_t(g)] == alone[size_t(g)]);
      }
}

TEST_CASE("gemm_bf16_packed: fewer rows over a packing for 64, once prepared, give those rows' bits among 64") {
  if (rfa::test::skip_if(!rfa::bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  // The decode step's shapes at width 384 (q/k/v/o, the SwiGLU's 2 Hf x C and Hf x C, an LM head),
  // whole and in two column parts: each M of 1..32 is prepared, and where it is usable run on other
  // operands than the preparation's, against the same rows among 64.
  constexpr int64_t P = 64;
  struct Shape { bool tb; int64_t N, K; bool acc; };
  for (const Shape sh : {Shape{true, 384, 384, false}, Shape{true, 384, 384, true}, Shape{true, 2048, 384, false},
                         Shape{false, 384, 1024, true}, Shape{true, 300, 384, false}})
    for (int parts : {1, 2}) {
      const auto B = to_bf16(random_vector<float>(size_t(sh.N * sh.K), 21));
      std::vector<rfa::Arena<uint8_t>> blocks;
      std::vector<const void*> packed;
      for (int p = 0; p < parts; ++p) {
        blocks.emplace_back(rfa::gemm_bf16_packed_bytes(sh.tb, P, sh.N, sh.K, sh.acc, p, parts));
        rfa::gemm_bf16_pack(sh.tb, P, sh.N, sh.K, sh.acc, B.data(), sh.tb ? sh.K : sh.N, p, parts,
                            blocks.back().data());
        packed.push_back(blocks.back().data());
      }
      const auto A = to_bf16(random_vector<float>(size_t(P * sh.K), 22));
      const auto C0 = random_vector<float>(size_t(P * sh.N), 23);
      auto all = C0;
      rfa::gemm_bf16_packed(sh.tb, P, sh.N, sh.K, sh.acc, A.data(), packed.data(), parts, all.data());
      for (int64_t M : {1, 2, 4, 8, 16, 32}) {
        INFO("trans_b ", sh.tb, " N ", sh.N, " K ", sh.K, " accumulate ", sh.acc, " parts ", parts, " M ", M);
        const bool usable = rfa::gemm_bf16_packed_rows_prepare(sh.tb, M, sh.N, sh.K, sh.acc, packed.data(), parts, P);
        // oneDNN 2.6 on AVX512-BF16: brgemm at every M, whole or in column parts (each part writes a
        // contiguous block; into the strided columns only its jit gemm ran, whose one-row kernel sums
        // in another order: this refused M 1 then).
        CHECK(usable);
        if (!usable) continue;
        const int64_t before = rfa::gemm_bf16_primitive_count();
        std::vector<float> few(C0.begin(), C0.begin() + M * sh.N);
        rfa::gemm_bf16_packed(sh.tb, M, sh.N, sh.K, sh.acc, A.data(), packed.data(), parts, few.data(), P);
        CHECK(rfa::gemm_bf16_primitive_count() == before);  // prepared: nothing created in the loop
        CHECK(std::equal(few.begin(), few.end(), all.begin()));
      }
    }
}

TEST_CASE("gemm_bf16: the threads of one region run their own products at once, each its own scratchpad") {
  if (rfa::test::skip_if(!rfa::bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  // Each thread a product of its own shape (a scratchpad each, the primitives created by the
  // threads themselves), 20 rounds side by side, against the product each gives alone: with one
  // shared scratchpad or memory object the threads overwrite each other's partial sums.
  const int threads = 2;
  const int64_t M[] = {96, 160}, N = 384, K = 384;
  std::vector<std::vector<uint16_t>> A, B;
  std::vector<std::vector<float>> alone, side;
  for (int t = 0; t < threads; ++t) {
    A.push_back(to_bf16(random_vector<float>(size_t(M[t] * K), 11 + t)));
    B.push_back(to_bf16(random_vector<float>(size_t(N * K), 21 + t)));
    alone.emplace_back(size_t(M[t] * N));
    rfa::gemm_bf16(false, true, M[t], N, K, A[t].data(), K, B[t].data(), K, false, alone[t].data(), N,
                   rfa::GemmThreads::one);
    side.emplace_back(size_t(M[t] * N));
  }
  int same = 0, started = 0;
#pragma omp parallel num_threads(threads) reduction(+ : same, started)
  {
    const int t = omp_get_thread_num();
    omp_set_num_threads(1);  // as the batch split's threads (core/parallel.h parallel_region_serial_calls)
    started = 1;
    for (int round = 0; round < 20; ++round) {
      std::fill(side[t].begin(), side[t].end(), NAN);
      rfa::gemm_bf16(false, true, M[t], N, K, A[t].data(), K, B[t].data(), K, false, side[t].data(), N);
#pragma omp barrier
      same += side[t] == alone[t] ? 1 : 0;
#pragma omp barrier
    }
  }
  REQUIRE(started == threads);
  CHECK(same == 20 * threads);
}
