#include "kernels/gemm.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "support/gradcheck.h"

using rfa::test::check_close;
using rfa::test::random_vector;

namespace {

// Runs gemm<float> and gemm_reference<float> on the same padded operands and
// compares them. Leading dimensions are padded by 3 so lda != K is exercised.
void check_gemm_shape(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta) {
  int64_t a_rows = ta ? K : M, a_cols = ta ? M : K;
  int64_t b_rows = tb ? N : K, b_cols = tb ? K : N;
  int64_t lda = a_cols + 3, ldb = b_cols + 3, ldc = N + 3;
  auto A = random_vector<float>(a_rows * lda, 1 + M);
  auto B = random_vector<float>(b_rows * ldb, 2 + N);
  auto C0 = random_vector<float>(M * ldc, 3 + K);
  auto fast = C0, ref = C0;
  rfa::gemm<float>(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, fast.data(), ldc);
  rfa::gemm_reference<float>(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, ref.data(), ldc);
  INFO("trans_a ", ta, " trans_b ", tb, " M ", M, " N ", N, " K ", K, " alpha ", alpha, " beta ", beta);
  // Entries are sums of K products of N(0,1) values: error grows like sqrt(K) * ulp.
  double atol = 1e-5 * std::sqrt(static_cast<double>(K) + 1) * 4;
  check_close("gemm vs reference", fast.data(), ref.data(), fast.size(), 1e-5, atol);
  // The padding columns of C must be untouched.
  bool padding_kept = true;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = N; j < ldc; ++j) padding_kept = padding_kept && fast[i * ldc + j] == C0[i * ldc + j];
  CHECK(padding_kept);
}

}  // namespace

TEST_CASE("gemm: float (oneDNN) matches the reference on awkward shapes, all transposes, beta 0 and 1") {
  const int64_t sizes[] = {1, 7, 65, 129};
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t M : sizes)
        for (int64_t N : sizes)
          for (int64_t K : sizes)
            for (float beta : {0.0f, 1.0f}) check_gemm_shape(ta, tb, M, N, K, beta == 0.0f ? 1.0f : 0.5f, beta);
}

TEST_CASE("gemm: reference computes a known 2x2 product with alpha and beta") {
  // A = [[1,2],[3,4]], B = [[5,6],[7,8]] => AB = [[19,22],[43,50]]
  const double A[] = {1, 2, 3, 4}, B[] = {5, 6, 7, 8};
  double C[] = {1, 1, 1, 1};
  rfa::gemm_reference<double>(false, false, 2, 2, 2, 2.0, A, 2, B, 2, 1.0, C, 2);
  CHECK(C[0] == 39);
  CHECK(C[1] == 45);
  CHECK(C[2] == 87);
  CHECK(C[3] == 101);
  // A^T B^T = (BA)^T; BA = [[23,34],[31,46]] => [[23,31],[34,46]]
  double D[4];
  rfa::gemm_reference<double>(true, true, 2, 2, 2, 1.0, A, 2, B, 2, 0.0, D, 2);
  CHECK(D[0] == 23);
  CHECK(D[1] == 31);
  CHECK(D[2] == 34);
  CHECK(D[3] == 46);
}

TEST_CASE("gemm: beta 0 overwrites C even when it holds NaN; K 0 scales C by beta") {
  auto A = random_vector<float>(7 * 5, 11), B = random_vector<float>(5 * 9, 12);
  std::vector<float> C(7 * 9, NAN), ref(7 * 9);
  rfa::gemm<float>(false, false, 7, 9, 5, 1.0f, A.data(), 5, B.data(), 9, 0.0f, C.data(), 9);
  rfa::gemm_reference<float>(false, false, 7, 9, 5, 1.0f, A.data(), 5, B.data(), 9, 0.0f, ref.data(), 9);
  check_close("beta 0 over NaN", C.data(), ref.data(), C.size(), 1e-5, 1e-5);

  std::vector<float> D(6, 2.0f);
  rfa::gemm<float>(false, false, 2, 3, 0, 1.0f, A.data(), 1, B.data(), 3, 0.5f, D.data(), 3);
  for (float d : D) CHECK(d == 1.0f);
  rfa::gemm<float>(false, false, 2, 3, 0, 1.0f, A.data(), 1, B.data(), 3, 0.0f, D.data(), 3);
  for (float d : D) CHECK(d == 0.0f);
}

TEST_CASE("gemm: a 512x512x512 float product through oneDNN matches the reference") {
  const int64_t n = 512;
  auto A = random_vector<float>(n * n, 21), B = random_vector<float>(n * n, 22);
  std::vector<float> fast(n * n), ref(n * n);
  rfa::gemm<float>(false, true, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, fast.data(), n);
  rfa::gemm_reference<float>(false, true, n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, ref.data(), n);
  check_close("512^3", fast.data(), ref.data(), fast.size(), 1e-4, 2e-4);
  // A wrong leading dimension or transpose would be far off, not slightly off.
  double diff = 0;
  for (int64_t i = 0; i < n * n; ++i) diff = std::max(diff, static_cast<double>(std::abs(fast[i] - ref[i])));
  CHECK(diff < 1e-3);
}

TEST_CASE("gemm: double runs the reference exactly; batched equals a loop of single products") {
  auto A = random_vector<double>(3 * 4 * 6, 31), B = random_vector<double>(3 * 6 * 5, 32);
  std::vector<double> C(3 * 4 * 5, 0.0), ref(3 * 4 * 5, 0.0);
  rfa::gemm_batched<double>(3, false, false, 4, 5, 6, 1.0, A.data(), 6, 24, B.data(), 5, 30, 0.0, C.data(), 5, 20);
  for (int b = 0; b < 3; ++b)
    rfa::gemm_reference<double>(false, false, 4, 5, 6, 1.0, A.data() + 24 * b, 6, B.data() + 30 * b, 5, 0.0,
                                ref.data() + 20 * b, 5);
  for (size_t i = 0; i < C.size(); ++i) CHECK(C[i] == ref[i]);

  auto Af = random_vector<float>(3 * 4 * 6, 33), Bf = random_vector<float>(3 * 5 * 6, 34);
  std::vector<float> Cf(3 * 4 * 5, 0.0f), reff(3 * 4 * 5, 0.0f);
  rfa::gemm_batched<float>(3, false, true, 4, 5, 6, 1.0f, Af.data(), 6, 24, Bf.data(), 6, 30, 0.0f, Cf.data(), 5,
                           20);
  for (int b = 0; b < 3; ++b)
    rfa::gemm_reference<float>(false, true, 4, 5, 6, 1.0f, Af.data() + 24 * b, 6, Bf.data() + 30 * b, 6, 0.0f,
                               reff.data() + 20 * b, 5);
  check_close("batched float", Cf.data(), reff.data(), Cf.size(), 1e-5, 1e-5);
}

TEST_CASE("gemm: how a product is spread over the threads follows the rules of gemm.cpp") {
  using rfa::GemmSplit;
  const bool avx2 = rfa::gemm_isa_effective().rfind("avx2", 0) == 0;
  INFO("oneDNN ISA ", rfa::gemm_isa_effective());
  auto split = [](bool ta, bool tb, int64_t M, int64_t N, int64_t K, int threads, int64_t partials) {
    return rfa::gemm_split_of(ta, tb, M, N, K, ta ? M : K, tb ? K : N, N, threads, partials);
  };
  // The nano model's products (768 tokens): forward and input gradients by rows, weight gradients
  // by the threads' tokens when partials are bound, else by rows on AVX2 and oneDNN's otherwise.
  CHECK(split(false, true, 768, 704, 128, 2, 0) == GemmSplit::rows);
  CHECK(split(false, false, 768, 128, 704, 2, 0) == GemmSplit::rows);
  CHECK(split(true, false, 704, 128, 768, 2, 704 * 128) == GemmSplit::k_sums);
  CHECK(split(true, false, 704, 128, 768, 2, 704 * 128 - 1) == (avx2 ? GemmSplit::rows : GemmSplit::onednn));
  CHECK(split(true, false, 704, 128, 768, 3, 704 * 128) == (avx2 ? GemmSplit::rows : GemmSplit::onednn));
  CHECK(split(true, false, 704, 128, 768, 3, 2 * 704 * 128) == GemmSplit::k_sums);
  CHECK(split(true, true, 704, 128, 768, 2, 704 * 128) == GemmSplit::onednn);
  // Not split: one thread, too few rows or tokens a thread (too few tokens: by rows on AVX2), past
  // 2^28 multiply-adds, 4 KiB strides.
  CHECK(split(false, true, 768, 704, 128, 1, 0) == GemmSplit::onednn);
  CHECK(split(false, true, 127, 704, 128, 2, 0) == GemmSplit::onednn);
  CHECK(split(true, false, 704, 128, 127, 2, 704 * 128) == (avx2 ? GemmSplit::rows : GemmSplit::onednn));
  CHECK(split(true, false, 127, 128, 127, 2, 704 * 128) == GemmSplit::onednn);
  CHECK(split(false, true, 2048, 2048, 128, 2, 0) == GemmSplit::onednn);
  CHECK(split(true, false, 1024, 384, 4096, 2, 1 << 30) == GemmSplit::onednn);
  CHECK(rfa::gemm_split_of(false, true, 768, 1024, 128, 128, 128, 1024, 2, 0) == GemmSplit::onednn);
  // The partials a model needs: none on one thread, else (threads - 1) of the largest C that can split.
  CHECK(rfa::gemm_partials_floats(704 * 128, 768, 1) == 0);
  CHECK(rfa::gemm_partials_floats(704 * 128, 768, 2) == 704 * 128);
  CHECK(rfa::gemm_partials_floats(704 * 128, 768, 3) == 2 * 704 * 128);
  CHECK(rfa::gemm_partials_floats(704 * 128, 768, 16) == 0);  // 48 tokens a thread: never summed apart
  CHECK(rfa::gemm_partials_floats(2048 * 384, 4096, 2) == (int64_t(1) << 28) / 4096);
}

TEST_CASE("gemm: products split by rows and by the threads' tokens match the reference, repeatably") {
  const int before = rfa::thread_count();
  rfa::thread_count_set(2);
  // Rows not a multiple of 16 (ragged blocks), beta 1 (C's prior values count), padded leading
  // dimensions (check_gemm_shape keeps C's padding): by rows without partials bound...
  for (float beta : {0.0f, 1.0f}) {
    check_gemm_shape(false, true, 181, 65, 300, 1.0f, beta);
    check_gemm_shape(false, false, 181, 65, 300, 0.5f, beta);
    check_gemm_shape(true, false, 181, 65, 300, 1.0f, beta);
  }
  // ...and Aᵀ B by tokens with them (the partials' contents before do not matter).
  std::vector<float> partials(181 * 65, 1e30f);
  {
    const rfa::GemmPartialsScope bound(partials.data(), int64_t(partials.size()));
    REQUIRE(rfa::gemm_split_of(true, false, 181, 65, 300, 184, 68, 68, 2, int64_t(partials.size())) ==
            rfa::GemmSplit::k_sums);
    for (float beta : {0.0f, 1.0f}) check_gemm_shape(true, false, 181, 65, 300, 0.75f, beta);
    const int64_t M = 181, N = 65, K = 300;
    auto A = random_vector<float>(K * M, 31), B = random_vector<float>(K * N, 32);
    std::vector<float> first(M * N), second(M * N);
    rfa::gemm<float>(true, false, M, N, K, 1.0f, A.data(), M, B.data(), N, 0.0f, first.data(), N);
    rfa::gemm<float>(true, false, M, N, K, 1.0f, A.data(), M, B.data(), N, 0.0f, second.data(), N);
    CHECK(first == second);
  }
  rfa::thread_count_set(before);
}
