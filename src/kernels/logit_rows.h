#pragma once
// Reductions over one row of logits (V floats) that scoring and sampling take: the largest logit
// with the row's finiteness beside it, the first index holding a value, and log Σ exp in double.
// Rows sit anywhere in a batch: loads are unaligned, and a result never depends on the address.
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "kernels/simd.h"

namespace rfa {

struct LogitsMax {
  float max;    // the largest logit (meaningless when !finite)
  bool finite;  // every logit finite
};

// One vectorised pass: the maximum and whether every value is finite (n >= 1).
inline LogitsMax logits_max(const float* x, int n) {
  float top = x[0];
  int non_finite = 0;
#pragma omp simd reduction(max : top) reduction(| : non_finite)
  for (int i = 0; i < n; ++i) {
    const float v = x[i];
    top = v > top ? v : top;
    non_finite |= std::fabs(v) <= FLT_MAX ? 0 : 1;
  }
  return {top, non_finite == 0};
}

// The first i with x[i] not finite, or n: the offender a message names once logits_max said there is one.
inline int logits_first_non_finite(const float* x, int n) {
  int i = 0;
  while (i < n && std::isfinite(x[i])) ++i;
  return i;
}

// The first i with x[i] == value, which must occur in x[0, n): the first register holding it, then its
// lane (-0 and +0 compare equal: the first of either, as a scalar `>` scan keeps).
inline int32_t logits_first_index(const float* x, int n, float value) {
  using Vf = Simd<float>::V;
  constexpr int W = Simd<float>::W;
  int32_t i = 0;
  while (i + W <= n && !(simd_max<float>(Vf(simd_load(x + i))) == value)) i += W;
  while (!(x[i] == value)) ++i;
  return i;
}

// log Σ_i e^(x_i - top) in double for a finite row whose largest value is top: each term within
// about 2 ulp of std::exp of the same double difference (registers of doubles, a Cody-Waite
// reduction and a degree-13 Taylor polynomial), summed in lanes. Terms below e^-708 count as e^-708,
// which no sum >= 1 notices. As close to the exact value as libm's exp summed one term at a time
// (tests: 2.4e-15 and 4.7e-15 at worst against long double), at a tenth of the cost: perplexity at
// V 8000 spent half its time in that loop.
double logits_log_sum_exp(const float* x, int n, float top);

}  // namespace rfa
