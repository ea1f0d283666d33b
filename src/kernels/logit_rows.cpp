#include "kernels/logit_rows.h"

#include <bit>

namespace rfa {
namespace {

using Vd = Simd<double>::V;
constexpr int Wd = Simd<double>::W;
// Wd floats: half a register, widened to a register of doubles.
typedef float HalfF __attribute__((vector_size(kVectorBytes / 2), aligned(alignof(float)), may_alias));

// e^x for x in [-708, 0] lane by lane (x <= 0 here: differences to the row's maximum; below -708
// clamped, so every result is a normal double). x = n ln2 + r, |r| <= ln2 / 2, with ln2 in two
// parts (fdlibm's: n ln2_hi exact for |n| < 2^11); e^r by Horner in r to r^13/13!, whose
// truncation (|r|^14/14! < 5e-18) is below the rounding; then scaled by 2^n through the exponent bits.
inline Vd exp_nonpositive(const Vd& x_in) {
  typedef int64_t Bits __attribute__((vector_size(kVectorBytes)));
  const Vd x = x_in < -708.0 ? Vd{} - 708.0 : x_in;
  const double shifter = 6755399441055744.0;  // 1.5 * 2^52: t's low bits hold round(x / ln2)
  const Vd t = x * 1.4426950408889634 + shifter;
  const Vd n = t - shifter;
  const Vd r = (x - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
  Vd p = Vd{} + 1.0 / 6227020800.0;  // 1/13!
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const Bits bits = ((Bits)t - std::bit_cast<int64_t>(shifter) + 1023) << 52;
  return p * (Vd)bits;
}

inline Vd widen(const float* p) { return __builtin_convertvector(*reinterpret_cast<const HalfF*>(p), Vd); }

}  // namespace

double logits_log_sum_exp(const float* x, int n, float top) {
  const double m = top;
  Vd a0{}, a1{};  // two chains of sums: the polynomials of consecutive registers overlap
  int i = 0;
  for (; i + 2 * Wd <= n; i += 2 * Wd) {
    a0 += exp_nonpositive(widen(x + i) - m);
    a1 += exp_nonpositive(widen(x + i + Wd) - m);
  }
  for (; i + Wd <= n; i += Wd) a0 += exp_nonpositive(widen(x + i) - m);
  double sum = simd_sum<double>(a0 + a1);
  for (; i < n; ++i) sum += std::exp(double(x[i]) - m);
  return std::log(sum);
}

}  // namespace rfa
