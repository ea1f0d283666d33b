#include "kernels/bf16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/cpu_target.h"
#include "kernels/gemm.h"
#include "core/step_profile.h"

namespace rfa {
namespace {

// bf16 products are oneDNN's avx512_core_bf16 kernels: x86 only. Elsewhere (arm64) bf16_native()
// is false, every bf16 request is refused, and only the scalar conversion below is compiled in.
#if defined(__x86_64__)
// 16 floats per instruction; the tail through a mask. Compiled for AVX512-BF16
// whatever -march says, and called only after bf16_native() said yes.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void convert_avx512(uint16_t* out, const float* x,
                                                                                    int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 lo = _mm512_loadu_ps(x + i), hi = _mm512_loadu_ps(x + i + 16);
    _mm512_storeu_si512(out + i, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));  // lanes 0-15 from lo, 16-31 from hi
  }
  for (; i < n; i += 16) {
    const __mmask16 mask = static_cast<__mmask16>(n - i >= 16 ? 0xffff : (1u << (n - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(mask, x + i);
    _mm256_mask_storeu_epi16(out + i, mask, (__m256i)_mm512_cvtneps_pbh(v));
  }
}
#endif

void convert_scalar(uint16_t* out, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = bf16_from_float_reference(x[i]);
}

// Elements per parallel item: 64 KiB of floats, a few microseconds of work.
constexpr int64_t kBlock = 16384;

// Test hook, honoured only in RFA_TEST_HOOKS builds (the default when the tests are built):
// RFA_TEST_NO_AVX512BF16 in the environment makes this CPU look like one without AVX512-BF16,
// so that the refusals are tested on machines that have it (tests/e2e/bf16_smoke.sh).
[[maybe_unused]] bool bf16_hidden_by_test() {
#ifdef RFA_TEST_HOOKS
  return std::getenv("RFA_TEST_NO_AVX512BF16") != nullptr;
#else
  return false;
#endif
}

}  // namespace

bool bf16_native() {
#if defined(__x86_64__)
  // oneDNN must also be allowed its bf16 kernels (a build for x86-64-v3 caps it at AVX2).
  static const bool native = __builtin_cpu_supports("avx512bf16") && gemm_isa_allows_bf16() && !bf16_hidden_by_test();
  return native;
#else
  return false;
#endif
}

void bf16_require(const char* what, const char* fix) {
  if (bf16_native()) return;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512bf16") && !gemm_isa_allows_bf16() && !bf16_hidden_by_test())
    fail("{} asks for bf16, but this rfa holds its matrix products at {} (built for {}; docs/cpu-targets.md); "
         "build with RFA_ARCH=native or x86-64-v4 for bf16, or {}",
         what, gemm_isa_effective(), cpu_target_name(), fix);
  fail("{} asks for bf16, but this CPU has no AVX512-BF16 (see avx512_bf16 in /proc/cpuinfo); {}", what, fix);
#else
  fail("{} asks for bf16, but rfa's bf16 products need an x86 CPU with AVX512-BF16 and this rfa is built for {} "
       "(docs/cpu-targets.md); {}",
       what, cpu_target_name(), fix);
#endif
}

void bf16_from_float_serial(uint16_t* out, const float* x, int64_t n) {
#if defined(__x86_64__)
  if (bf16_native())
    convert_avx512(out, x, n);
  else
    convert_scalar(out, x, n);
#else
  convert_scalar(out, x, n);
#endif
}

void bf16_from_float(uint16_t* out, const float* x, int64_t n) {
  ProfileScope profile(ProfiledKernel::bf16_copy, 0, 6.0 * double(n));  // 4 bytes read, 2 written each
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  // Memory-bound: a second thread helps only once the array is past a few blocks.
  parallel_for(blocks, 4, [&](int64_t b) {
    const int64_t begin = b * kBlock, count = std::min(kBlock, n - begin);
    bf16_from_float_serial(out + begin, x + begin, count);
  });
}

}  // namespace rfa
