#include "kernels/gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <atomic>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/onednn_call_scope.h"

namespace rfa {

namespace {

// C = beta * C for the degenerate K == 0 product (oneDNN rejects K == 0 with
// some leading dimensions; BLAS semantics say op(A) op(B) is the zero matrix).
template <typename T>
void scale_c(int64_t M, int64_t N, T beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == T(0) ? T(0) : beta * C[i * ldc + j];
}

}  // namespace

// Only on oneDNN's AVX2 kernels: there oneDNN 2.6 splits Aᵀ B products (the weight gradients
// dW = dYᵀ X, K the tokens) poorly, 1.45-1.65x on 2 threads where its other products reach 1.9x,
// and split by rows they run 8-13% faster (768 tokens: M 64-704, N 128; docs/cpu-targets.md). Not
// past 2^28 multiply-adds: at 4096 tokens and N 384 the split measured +7% at M 384 but -44% at
// M 1024 (A's rows 4 KiB apart) and nothing at 2048; not below 64 rows a thread. With AVX-512
// oneDNN's own split is as fast.
bool gemm_splits_rows_over_threads(int64_t M, int64_t N, int64_t K, int threads) {
#if defined(__x86_64__)
  static const bool avx2_kernels = [] {  // read at the first product, after kernels/cpu_target.h's cap
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return isa == dnnl_cpu_isa_avx2 || isa == dnnl_cpu_isa_avx2_vnni;
  }();
#else
  constexpr bool avx2_kernels = false;  // (other ports return their own codes through this enum)
#endif
  return avx2_kernels && threads > 1 && M >= 64 * int64_t(threads) && double(M) * double(N) * double(K) <= 0x1p28;
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
  if (threads == GemmThreads::one) {
    single_threaded(product);
  } else if (const int pool = thread_count(); trans_a && !trans_b && gemm_splits_rows_over_threads(M, N, K, pool)) {
    // Each thread a serial product on its own rows of C (a multiple of 16, the last takes the rest):
    // every entry summed over the whole K by one thread, so the result depends on the thread count
    // only, as oneDNN's own split does.
    parallel_region_serial_calls([&](int t, int nt) {
      const int64_t m0 = M * t / nt / 16 * 16, m1 = t == nt - 1 ? M : M * (t + 1) / nt / 16 * 16;
      const OnednnCallScope in_onednn;
      const dnnl_status_t s = dnnl_sgemm('T', 'N', m1 - m0, N, K, alpha, A + m0, lda, B, ldb, beta, C + m0 * ldc, ldc);
      if (s != dnnl_success) split_status.store(s);
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
