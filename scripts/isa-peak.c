// The core's instruction-level peak for fp32 and bf16 products: the throughput of
// vfmadd231ps zmm (16 fp32 multiply-adds) against vdpbf16ps zmm (32 bf16 products summed
// into 16 fp32 lanes), 12 independent accumulators each so latency does not count.
// If vdpbf16ps issues at half the rate of the FMA (Intel cores with one 512-bit bf16 port),
// bf16 has no more arithmetic peak than fp32 and bf16 matrix products can only win on
// memory traffic; where both issue at the same rate (AMD Zen 4), bf16's peak is twice fp32's.
// Build and run: scripts/isa-peak.sh (needs AVX512-BF16).
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
#define N 200000000L
int main(void) {
  for (int rep = 0; rep < 3; ++rep) {
    __m512 a0 = _mm512_set1_ps(1e-9f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8=a0,a9=a0,a10=a0,a11=a0;
    __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
    double t0 = now();
    for (long i = 0; i < N / 12; ++i) {
      a0 = _mm512_fmadd_ps(x, y, a0); a1 = _mm512_fmadd_ps(x, y, a1); a2 = _mm512_fmadd_ps(x, y, a2);
      a3 = _mm512_fmadd_ps(x, y, a3); a4 = _mm512_fmadd_ps(x, y, a4); a5 = _mm512_fmadd_ps(x, y, a5);
      a6 = _mm512_fmadd_ps(x, y, a6); a7 = _mm512_fmadd_ps(x, y, a7); a8 = _mm512_fmadd_ps(x, y, a8);
      a9 = _mm512_fmadd_ps(x, y, a9); a10 = _mm512_fmadd_ps(x, y, a10); a11 = _mm512_fmadd_ps(x, y, a11);
    }
    double t1 = now();
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)), _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    __m512bh bx = (__m512bh)_mm512_set1_epi16(0x3f80), by = bx;
    __m512 b0 = _mm512_setzero_ps(), b1 = b0, b2 = b0, b3 = b0, b4 = b0, b5 = b0, b6 = b0, b7 = b0, b8=b0,b9=b0,b10=b0,b11=b0;
    double t2 = now();
    for (long i = 0; i < N / 12; ++i) {
      b0 = _mm512_dpbf16_ps(b0, bx, by); b1 = _mm512_dpbf16_ps(b1, bx, by); b2 = _mm512_dpbf16_ps(b2, bx, by);
      b3 = _mm512_dpbf16_ps(b3, bx, by); b4 = _mm512_dpbf16_ps(b4, bx, by); b5 = _mm512_dpbf16_ps(b5, bx, by);
      b6 = _mm512_dpbf16_ps(b6, bx, by); b7 = _mm512_dpbf16_ps(b7, bx, by); b8 = _mm512_dpbf16_ps(b8, bx, by);
      b9 = _mm512_dpbf16_ps(b9, bx, by); b10 = _mm512_dpbf16_ps(b10, bx, by); b11 = _mm512_dpbf16_ps(b11, bx, by);
    }
    double t3 = now();
    __m512 u = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(b0, b1), _mm512_add_ps(b2, b3)), _mm512_add_ps(_mm512_add_ps(b4, b5), _mm512_add_ps(b6, b7)));
    u = _mm512_add_ps(u, _mm512_add_ps(_mm512_add_ps(b8, b9), _mm512_add_ps(b10, b11)));
    double fma = (double)(N / 12 * 12) / (t1 - t0), dp = (double)(N / 12 * 12) / (t3 - t2);
    printf("fmadd231ps zmm: %.2f G instr/s = %.1f GFLOP/s | vdpbf16ps zmm: %.2f G instr/s = %.1f GFLOP/s | bf16/fp32 flop ratio %.2f  (%g %g)\n",
           fma / 1e9, fma * 32 / 1e9, dp / 1e9, dp * 64 / 1e9, dp * 64 / (fma * 32), _mm512_reduce_add_ps(s), _mm512_reduce_add_ps(u));
  }
}
