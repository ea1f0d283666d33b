// The core's instruction-level peak for fp32 and bf16 products: the throughput of
// vfmadd231ps zmm (16 fp32 multiply-adds) against vdpbf16ps zmm (32 bf16 products summed
// into 16 fp32 lanes), 12 independent accumulators each so latency does not count.
// The accumulators start different and pass through an empty asm statement every 48 operations:
// otherwise the compiler sees twelve identical chains and merges them into one (an earlier version
// of this file timed one latency-bound chain and counted it twelve times; scripts/isa-peak.sh now
// checks the binary holds all 96 instructions).
// If vdpbf16ps issues at half the FMA's rate, bf16 has no more arithmetic peak than fp32; at a
// quarter (measured on a Xeon family 6 model 207, 2026-12-01), half of fp32's; where both issue at
// the same rate (AMD Zen 4), twice fp32's. Build and run: scripts/isa-peak.sh (needs AVX512-BF16).
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
#define N 120000000L
// Twelve named accumulators (an array would live in memory at -O2); OP(k) updates accumulator k.
#define TWELVE(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) OP(8) OP(9) OP(10) OP(11)
#define KEEP12(p) __asm__ volatile("" : "+v"(p##0), "+v"(p##1), "+v"(p##2), "+v"(p##3), "+v"(p##4), "+v"(p##5), \
                                        "+v"(p##6), "+v"(p##7), "+v"(p##8), "+v"(p##9), "+v"(p##10), "+v"(p##11))
int main(void) {
  for (int rep = 0; rep < 3; ++rep) {
#define INIT(k) __m512 a##k = _mm512_set1_ps(1e-3f * k), b##k = a##k;
    TWELVE(INIT)
    const __m512 x = _mm512_set1_ps(1.0000001f), y = _mm512_set1_ps(0.9999999f);
    const __m512bh bx = (__m512bh)_mm512_set1_epi16(0x3f80), by = (__m512bh)_mm512_set1_epi16(0x3f7f);
    double t0 = now();
    for (long i = 0; i < N / 48; ++i) {  // 4 rounds of 12 between barriers: the barrier may cost a move per accumulator
#define FMA(k) a##k = _mm512_fmadd_ps(x, y, a##k);
      TWELVE(FMA) TWELVE(FMA) TWELVE(FMA) TWELVE(FMA)
      KEEP12(a);
    }
    double t1 = now();
    for (long i = 0; i < N / 48; ++i) {
#define DOT(k) b##k = _mm512_dpbf16_ps(b##k, bx, by);
      TWELVE(DOT) TWELVE(DOT) TWELVE(DOT) TWELVE(DOT)
      KEEP12(b);
    }
    double t2 = now();
    float sa = 0, sb = 0;
#define SUM(k) sa += _mm512_reduce_add_ps(a##k), sb += _mm512_reduce_add_ps(b##k);
    TWELVE(SUM)
    double fma = (double)(N / 48 * 48) / (t1 - t0), dp = (double)(N / 48 * 48) / (t2 - t1);
    printf("fmadd231ps zmm: %.2f G instr/s = %.1f GFLOP/s | vdpbf16ps zmm: %.2f G instr/s = %.1f GFLOP/s | "
           "bf16/fp32 flop ratio %.2f  (%g %g)\n",
           fma / 1e9, fma * 32 / 1e9, dp / 1e9, dp * 64 / 1e9, dp * 64 / (fma * 32), sa, sb);
  }
}
