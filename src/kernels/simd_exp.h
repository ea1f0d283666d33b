#pragma once
// exp of a whole register (Simd<T>::V): for kernels that keep their values in registers
// across a loop (the blockwise softmax's column passes) rather than in an `omp simd` loop
// over memory. float: exp_approx's steps (kernels/fast_exp.h) on every lane, the same
// operations in the same order, so the same bits as exp_of per element; double (the
// gradient checks): std::exp lane by lane.
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/fast_exp.h"
#include "kernels/vector_math.h"

namespace rfa {

template <typename T>
inline typename Simd<T>::V simd_exp(const typename Simd<T>::V& x_in) {
  using V = typename Simd<T>::V;
  if constexpr (sizeof(T) == sizeof(float)) {
    typedef uint32_t Bits __attribute__((vector_size(kVectorBytes)));
    // exp_approx's clamps as selects of whole registers (a compare and a blend; a NaN lane
    // compares false and flows through); fast_exp.h says why the scalar code selects on the bits.
    V x = x_in < -87.3f ? V{} - 87.3f : x_in;
    x = x > 88.3f ? V{} + 88.3f : x;
    const float shifter = 12582912.0f;
    const V t = x * 1.44269504088896341f + shifter;
    const V n = t - shifter;
    V r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    const V r2 = r * r;
    V p = 1.9875691500e-4f * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r2 + r + 1.0f;
    const Bits bits = ((Bits)t - std::bit_cast<uint32_t>(shifter) + 127u) << 23;
    return p * (V)bits;
  } else {
    V y;
    for (int l = 0; l < Simd<T>::W; ++l) y[l] = std::exp(x_in[l]);
    return y;
  }
}

}  // namespace rfa
