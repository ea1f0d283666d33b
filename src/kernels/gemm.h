#pragma once
// Matrix products. gemm.cpp is the only file that includes oneDNN.
//
// Row-major: C (M, N) = alpha * op(A) (M, K) * op(B) (K, N) + beta * C.
// op(A) = A (M, K) with leading dimension lda >= K, or, when trans_a, A is stored
// (K, M) with lda >= M and op(A) = A^T. Likewise B: (K, N) ldb >= N, or stored
// (N, K) ldb >= K when trans_b. beta = 0 overwrites C (C may hold NaN then).
// float goes through oneDNN's sgemm; double runs the reference (it exists for
// gradient checks, not speed). Never call gemm inside a parallel_for body.
#include <cstdint>
#include <string>

namespace rfa {

// The highest instruction set oneDNN may use (kernels/cpu_target.h sets it at start-up).
enum class GemmIsa { any, sse41, avx2, avx512 };
// Caps oneDNN's JIT; a no-op once oneDNN has built a kernel (it then keeps its level).
void gemm_isa_cap(GemmIsa isa);
// The ISA oneDNN dispatches to now, e.g. "avx2", "avx512_core_bf16".
std::string gemm_isa_effective();
// True when oneDNN may run bf16 products (its ISA reaches avx512_core_bf16).
bool gemm_isa_allows_bf16();

// Threads one product may use: the pool (OpenMP's thread count), or only the
// calling thread. `one` is for products of few rows: oneDNN's threaded matrix-vector
// product measured 10-1000x slower than its serial one (it forks to stream a few
// hundred KB), and on a busy machine the second thread may not run at all. (The
// decode step's products are step_gemm's, which forks by work: step_gemm.h.)
enum class GemmThreads { pool, one };

// How gemm<float> spreads one product over the pool's threads (gemm.cpp says when and why):
//   onednn  oneDNN's own split;
//   rows    one serial oneDNN product per thread, each on its own block of C's rows, in the static
//           partition of the row kernels (core/parallel.h): row r of every activation (N, C) is
//           written and read by the same core through the step;
//   k_sums  C = Aᵀ B (the weight gradients, K the tokens): thread t sums its own block of K,
//           thread 0 into C, the others into the bound GemmPartialsScope, then each thread adds
//           the partials into its block of C's rows.
// Every entry is summed in an order fixed by the thread count: results depend on it only.
enum class GemmSplit { onednn, rows, k_sums };
GemmSplit gemm_split_of(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                        int64_t ldc, int threads, int64_t partials_floats);

// Floats of partials the k_sums split needs on `threads` threads for Aᵀ B products of at most
// `largest` entries of C over `tokens` rows: 0 on one thread or too few tokens a thread to split,
// else (threads - 1) copies of the largest C a split product can have (at most 2^28 multiply-adds).
int64_t gemm_partials_floats(int64_t largest, int64_t tokens, int threads);

// Binds `floats` floats at `data` as the k_sums split's partials for gemm<float> calls on the
// calling thread while it lives (the previous binding comes back after); without one, or too
// small, Aᵀ B products split otherwise. A model's Activations carry them (GradScratch).
class GemmPartialsScope {
 public:
  GemmPartialsScope(float* data, int64_t floats);
  ~GemmPartialsScope();
  GemmPartialsScope(const GemmPartialsScope&) = delete;
  GemmPartialsScope& operator=(const GemmPartialsScope&) = delete;

 private:
  float* previous_data_;
  int64_t previous_floats_;
};

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc, GemmThreads threads = GemmThreads::pool);

// Plain triple loop with a double accumulator: the twin the tests compare against.
template <typename T>
void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                    int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc);

// `batch` independent products; matrix i starts at A + i*stride_a, B + i*stride_b,
// C + i*stride_c (strides in elements). Runs the products one after another.
template <typename T>
void gemm_batched(int64_t batch, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha,
                  const T* A, int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T beta,
                  T* C, int64_t ldc, int64_t stride_c);

}  // namespace rfa
