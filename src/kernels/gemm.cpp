#include "kernels/gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/onednn_call_scope.h"
#include "kernels/vector_math.h"

namespace rfa {

namespace {

// C = beta * C for the degenerate K == 0 product (oneDNN rejects K == 0 with
// some leading dimensions; BLAS semantics say op(A) op(B) is the zero matrix).
template <typename T>
void scale_c(int64_t M, int64_t N, T beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == T(0) ? T(0) : beta * C[i * ldc + j];
}

// The k_sums split's partials bound on this thread (GemmPartialsScope).
thread_local float* t_partials = nullptr;
thread_local int64_t t_partials_floats = 0;

// Products up to this many multiply-adds split by the rules of gemm_split_of; larger ones go to
// oneDNN whole, which runs them as fast or faster.
constexpr double kSplitMaxWork = 0x1p28;
// Rows (or tokens) a thread needs at least for a split.
constexpr int64_t kSplitMinRows = 64;

bool onednn_runs_avx2() {
#if defined(__x86_64__)
  static const bool avx2 = [] {  // read at the first product, after kernels/cpu_target.h's cap
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return isa == dnnl_cpu_isa_avx2 || isa == dnnl_cpu_isa_avx2_vnni;
  }();
  return avx2;
#else
  return false;  // (other ports return their own codes through this enum)
#endif
}

}  // namespace

// Measured on 2 threads of a Zen 5 VM whose two cores are ~200 ns apart (one cache line there and
// back), nano model (768 tokens, C 128, Hf 352; docs/cpu-targets.md "Products split by rows"):
// - oneDNN 2.6 splits the small products its own way, so a row the rmsnorm, SwiGLU or attention
//   wrote on one core was often read or overwritten on the other. `rows` keeps each row on its
//   core; `k_sums` keeps each token's activations and gradients on theirs, only the partial
//   weight gradients (M N floats, not K (M + N)) cross. Together the nano step 9% faster on
//   x86-64-v3 and 5% natively with the cores ~200 ns apart, 2% with them ~55 ns apart.
// - Past 2^28 multiply-adds oneDNN's split is as good or better (2048 x 2048 x 128: 2.4x slower by
//   rows), and a leading dimension of a multiple of 4 KiB made a serial product 44% slower
//   (cache sets): both stay with oneDNN.
// - Aᵀ B without partials (no scope bound): by rows on oneDNN's AVX2 kernels, where its own split
//   of these products reached 1.45-1.65x on 2 threads (by rows 8-13% faster); else oneDNN's.
GemmSplit gemm_split_of(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb,
                        int64_t ldc, int threads, int64_t partials_floats) {
  auto page_strided = [](int64_t ld) { return ld >= 1024 && ld % 1024 == 0; };
  if (threads < 2 || double(M) * double(N) * double(K) > kSplitMaxWork) return GemmSplit::onednn;
  if (page_strided(lda) || page_strided(ldb) || page_strided(ldc)) return GemmSplit::onednn;
  const bool rows_fit = M >= kSplitMinRows * threads;
  if (!trans_a) return rows_fit ? GemmSplit::rows : GemmSplit::onednn;
  if (trans_b) return GemmSplit::onednn;
  if (K >= kSplitMinRows * threads && double(threads - 1) * double(M) * double(N) <= double(partials_floats))
    return GemmSplit::k_sums;
  return rows_fit && onednn_runs_avx2() ? GemmSplit::rows : GemmSplit::onednn;
}

int64_t gemm_partials_floats(int64_t largest, int64_t tokens, int threads) {
  if (threads < 2 || tokens < kSplitMinRows * threads) return 0;  // no product over `tokens` sums them apart
  const int64_t cap = static_cast<int64_t>(kSplitMaxWork) / tokens;  // M N of a split product over `tokens`
  return int64_t(threads - 1) * std::min(largest, cap);
}

GemmPartialsScope::GemmPartialsScope(float* data, int64_t floats)
    : previous_data_(t_partials), previous_floats_(t_partials_floats) {
  t_partials = data;
  t_partials_floats = data ? floats : 0;
}

GemmPartialsScope::~GemmPartialsScope() {
  t_partials = previous_data_;
  t_partials_floats = previous_floats_;
}

void gemm_isa_cap(GemmIsa isa) {
  dnnl_cpu_isa_t cap = dnnl_cpu_isa_all;
  switch (isa) {
    case GemmIsa::any: return;
    case GemmIsa::sse41: cap = dnnl_cpu_isa_sse41; break;
    case GemmIsa::avx2: cap = dnnl_cpu_isa_avx2; break;
    case GemmIsa::avx512: cap = dnnl_cpu_isa_avx512_core_bf16; break;  // every AVX-512 level with fp32 and bf16 kernels
  }
  dnnl_set_max_cpu_isa(cap);  // fails (and changes nothing) once a kernel exists: then the level stays
}
#if defined(__x86_64__)  // other architectures: at the end of this file (x86's lines stay where they were)
std::string gemm_isa_effective() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_all: return "all";
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
  }
  return "unknown";
}

bool gemm_isa_allows_bf16() {
  // The ISA values are bit sets, each level containing the bits of those below it.
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const unsigned bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
  return (isa & bf16) == bf16;
}
#endif
template <typename T>
void gemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                    int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        double a = trans_a ? A[k * lda + i] : A[i * lda + k];  // op(A)[i, k]
        double b = trans_b ? B[j * ldb + k] : B[k * ldb + j];  // op(B)[k, j]
        acc += a * b;
      }
      // beta == 0 overwrites, so NaN in an uninitialised C does not leak through.
      double prior = beta == T(0) ? 0.0 : static_cast<double>(beta) * C[i * ldc + j];
      C[i * ldc + j] = static_cast<T>(static_cast<double>(alpha) * acc + prior);
    }
  }
}

template <>
void gemm<float>(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, GemmThreads threads) {
  if (M == 0 || N == 0) return;
  if (K == 0) return scale_c(M, N, beta, C, ldc);
  dnnl_status_t status = dnnl_success;
  std::atomic<dnnl_status_t> split_status{dnnl_success};
  auto product = [&] {
    const OnednnCallScope in_onednn;  // its own allocations (kernels/onednn_call_scope.h)
    status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  };
  const GemmSplit split = threads == GemmThreads::one ? GemmSplit::onednn
                                                      : gemm_split_of(trans_a, trans_b, M, N, K, lda, ldb, ldc,
                                                                      thread_count(), t_partials_floats);
  if (threads == GemmThreads::one) {
    single_threaded(product);
  } else if (split == GemmSplit::rows) {
    // Rows [M t / nt, M (t + 1) / nt) of C: parallel_for's static partition of M rows.
    parallel_region_serial_calls([&](int t, int nt) {
      const int64_t m0 = M * t / nt, m1 = M * (t + 1) / nt;
      const OnednnCallScope in_onednn;
      const float* a = trans_a ? A + m0 : A + m0 * lda;  // op(A)'s rows m0..: A's columns or its rows
      const dnnl_status_t s = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m1 - m0, N, K, alpha, a, lda,
                                         B, ldb, beta, C + m0 * ldc, ldc);
      if (s != dnnl_success) split_status.store(s);
    });
    status = split_status.load();
  } else if (split == GemmSplit::k_sums) {
    float* partials = t_partials;  // (nt - 1) blocks of (M, N), thread t >= 1 writes block t - 1
    parallel_region_serial_calls([&](int t, int nt) {
      const int64_t k0 = K * t / nt, k1 = K * (t + 1) / nt;  // this thread's tokens
      {
        const OnednnCallScope in_onednn;
        const dnnl_status_t s =
            t == 0 ? dnnl_sgemm('T', 'N', M, N, k1 - k0, alpha, A, lda, B, ldb, beta, C, ldc)
                   : dnnl_sgemm('T', 'N', M, N, k1 - k0, alpha, A + k0 * lda, lda, B + k0 * ldb, ldb, 0.0f,
                                partials + (t - 1) * M * N, N);
        if (s != dnnl_success) split_status.store(s);
      }
      parallel_barrier();
      const int64_t m0 = M * t / nt, m1 = M * (t + 1) / nt;  // then C's rows m0.. += every partial's, in order
      for (int u = 1; u < nt; ++u)
        for (int64_t i = m0; i < m1; ++i) axpy(C + i * ldc, 1.0f, partials + (u - 1) * M * N + i * N, N);
    });
    status = split_status.load();
  } else {
    product();
  }
  RFA_ASSERT(status == dnnl_success, "dnnl_sgemm status {} for trans_a {} trans_b {} M {} N {} K {} lda {} ldb {} ldc {}",
             static_cast<int>(status), trans_a, trans_b, M, N, K, lda, ldb, ldc);
}

template <>
void gemm<double>(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
                  int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc, GemmThreads) {
  // Double exists for gradient checks on small shapes; the reference is enough.
  gemm_reference(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

template <typename T>
void gemm_batched(int64_t batch, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha,
                  const T* A, int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T beta,
                  T* C, int64_t ldc, int64_t stride_c) {
  for (int64_t i = 0; i < batch; ++i)
    gemm(trans_a, trans_b, M, N, K, alpha, A + i * stride_a, lda, B + i * stride_b, ldb, beta, C + i * stride_c,
         ldc);
}

template void gemm_reference<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                    const float*, int64_t, float, float*, int64_t);
template void gemm_reference<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                                     const double*, int64_t, double, double*, int64_t);
template void gemm_batched<float>(int64_t, bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                  int64_t, const float*, int64_t, int64_t, float, float*, int64_t, int64_t);
template void gemm_batched<double>(int64_t, bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                   int64_t, int64_t, const double*, int64_t, int64_t, double, double*, int64_t,
                                   int64_t);

#if !defined(__x86_64__)
std::string gemm_isa_effective() {
  // oneDNN's arm64 port returns its own ISA code through the x86 enum (2.6 under qemu-aarch64: 0x1f,
  // which the x86 names call avx512_mic_4ops): bit 0 is Advanced SIMD, bits 1-4 SVE of 128, 256, 384
  // and 512 bits. Named by the highest bit; any other code (another port) in hex.
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
#if defined(__aarch64__)
  static const char* const kArm[] = {"asimd", "sve_128", "sve_256", "sve_384", "sve_512"};
  if (isa != 0 && isa < 0x20) return kArm[31 - __builtin_clz(isa)];
#endif
  return fmt::format("isa {:#x}", isa);
}

// bf16 products are oneDNN's x86 avx512_core_bf16 kernels (kernels/bf16.h).
bool gemm_isa_allows_bf16() { return false; }
#endif

}  // namespace rfa
