#pragma once
// exp that the compiler can vectorise. glibc's expf is a scalar call unless the
// whole build uses -ffast-math, and softmax / SiLU spend most of their time in
// exp, so the float path uses this; the double path (gradient checks) uses std::exp.
//
// Cephes expf: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two parts so n*ln2_hi
// is exact), e^r by a degree-7 polynomial, 2^n assembled in the exponent bits.
// Relative error <= ~2 ulp on the clamped range. Inputs are clamped to
// [-87.3, 88.3]: e^x below ~1.2e-38 returns ~1.2e-38 instead of a denormal or 0
// (harmless next to the terms it is summed with), above it returns ~2.1e38.
// NaN propagates. The clamps are selects, not std::fmin/fmax: GCC does not
// vectorise fmin/fmax without -ffast-math, and that alone kept SiLU scalar.
#include <bit>
#include <cmath>
#include <cstdint>

namespace rfa {

// x, or `bound` where `beyond` holds, as a select on the bits. Not a ternary: GCC
// specialises `x < lo ? lo : x` into a path for the clamped lanes with the whole exp
// (and a caller's sigmoid) folded to constants, and sigmoid(-88.3) is a denormal
// constant: a vectorised loop without mask registers (AVX2) then multiplies by it on
// every lane of every iteration and pays a denormal assist each time (SiLU 10x slower
// on x86-64-v3). With the select there is one path. Same result as the ternary.
inline float select_float(bool beyond, float bound, float x) {
  const uint32_t mask = 0u - static_cast<uint32_t>(beyond);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(x) & ~mask) | (std::bit_cast<uint32_t>(bound) & mask));
}

inline float exp_approx(float x) {
  x = select_float(x < -87.3f, -87.3f, x);  // false for NaN: NaN flows through to the result
  x = select_float(x > 88.3f, 88.3f, x);
  // Round x*log2(e) to nearest: adding 1.5*2^23 pushes the fraction out.
  const float shifter = 12582912.0f;
  const float t = x * 1.44269504088896341f + shifter;  // 1.5*2^23 + n: n sits in t's low mantissa bits
  float n = t - shifter;
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;  // ln2 = 0.693359375 - 2.12194440e-4
  float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  // 2^n, n in [-126, 127], with n read from t's bits: a float -> int cast would be
  // undefined for NaN (UBSan found it through a decode state holding NaN).
  // Unsigned: wraps (defined) for the NaN bit patterns, exact for n in range.
  const uint32_t bits = (std::bit_cast<uint32_t>(t) - std::bit_cast<uint32_t>(shifter) + 127u) << 23;
  return p * std::bit_cast<float>(bits);
}

// The exp each precision uses: fast for float, exact for double.
inline float exp_of(float x) { return exp_approx(x); }
inline double exp_of(double x) { return std::exp(x); }

}  // namespace rfa
