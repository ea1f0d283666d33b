#pragma once
// bfloat16: the upper 16 bits of an IEEE float (sign, 8 exponent bits, 7 mantissa
// bits), stored as uint16_t. The matrix products of a bf16 run read bf16 operands
// (kernels/gemm_bf16.h); everything else stays float.
//
// float -> bf16 follows the AVX512-BF16 instruction VCVTNEPS2BF16 bit for bit, so
// the vector and scalar paths agree on every input:
//   normal numbers round to nearest, ties to even (may round up to infinity);
//   infinities keep their sign; NaN stays NaN (quietened: mantissa bit 6 set);
//   zeros and denormals become a zero of the same sign (the instruction treats
//   denormal inputs as zero; |x| < 2^-126 is far below anything a product reads).
#include <cstdint>
#include <cstring>

namespace rfa {

// The scalar reference of the conversion (the tests' twin).
inline uint16_t bf16_from_float_reference(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint32_t exponent = bits & 0x7f800000u, mantissa = bits & 0x007fffffu;
  if (exponent == 0) return static_cast<uint16_t>((bits >> 16) & 0x8000u);  // zero or denormal
  if (exponent == 0x7f800000u)
    return static_cast<uint16_t>((bits >> 16) | (mantissa != 0 ? 0x0040u : 0u));  // inf, or NaN made quiet
  const uint32_t rounding_bias = 0x7fffu + ((bits >> 16) & 1u);  // ties go to the even upper half
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

inline float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// True when the CPU has AVX512-BF16 (native bf16 conversion and dot products).
// Without it, train.precision bf16 and --precision bf16 are refused.
bool bf16_native();

// One clear error naming `what` (the option that asked for bf16) and `fix` (how to ask for
// fp32 instead) when the CPU lacks AVX512-BF16; nothing otherwise.
void bf16_require(const char* what, const char* fix);

// out[i] = bf16(x[i]) for i in [0, n), as bf16_from_float_reference. Vectorised
// (VCVTNEPS2BF16 on AVX512-BF16 CPUs, the scalar loop elsewhere); large arrays
// are split across the thread pool. Must not be called inside a parallel region.
void bf16_from_float(uint16_t* out, const float* x, int64_t n);

// The same on the calling thread only (the decode step's row vectors).
void bf16_from_float_serial(uint16_t* out, const float* x, int64_t n);

}  // namespace rfa
