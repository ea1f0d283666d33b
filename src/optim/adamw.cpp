#include "optim/adamw.h"

#include <algorithm>
#include <cmath>

#ifdef __AVX512F__
#include <immintrin.h>
#endif

#include "core/error.h"
#include "core/parallel.h"

namespace rfa {
namespace {

// Elements per parallel work item: large enough to amortise scheduling, small
// enough that 2+ threads get balanced work on small models.
constexpr int64_t kBlock = 1 << 14;

// The per-step scalars in the form PyTorch uses (bias corrections folded in).
struct AdamWScalars {
  float beta1, beta2, eps;
  float step_size;     // lr / (1 - b1^t)
  float inv_sqrt_bc2;  // 1 / sqrt(1 - b2^t)
  float keep_decay;    // 1 - lr * wd: the decoupled decay as a multiplier
};

AdamWScalars scalars_make(const AdamWStep& s) {
  RFA_ASSERT(s.t >= 1, "AdamW step counter t starts at 1, got {}", s.t);
  double bc1 = 1.0 - std::pow(s.beta1, static_cast<double>(s.t));
  double bc2 = 1.0 - std::pow(s.beta2, static_cast<double>(s.t));
  return {static_cast<float>(s.beta1), static_cast<float>(s.beta2), static_cast<float>(s.eps),
          static_cast<float>(s.lr / bc1), static_cast<float>(1.0 / std::sqrt(bc2)),
          static_cast<float>(1.0 - s.lr * s.weight_decay)};
}

// The raw kernel over [begin, end) with one decay multiplier. Explicit AVX-512:
// std::sqrt keeps a scalar errno check per element (we build without
// -fno-math-errno), so the plain loop never vectorises. Both paths compute
//   m = fma(b1, m, (1-b1) g),  v = fma(b2, v, ((1-b2) g) g),
//   p = fma(p, keep, -(step m) / fma(sqrt(v), inv_sqrt_bc2, eps))
// with the same roundings (vsqrtps rounds like vsqrtss), so the split between
// them does not change a single bit.
void adamw_segment(const AdamWScalars& k, float keep, float* __restrict p, const float* __restrict g,
                   float* __restrict m, float* __restrict v, int64_t begin, int64_t end) {
  int64_t i = begin;
#ifdef __AVX512F__
  const __m512 b1 = _mm512_set1_ps(k.beta1), b2 = _mm512_set1_ps(k.beta2);
  const __m512 c1 = _mm512_set1_ps(1.0f - k.beta1), c2 = _mm512_set1_ps(1.0f - k.beta2);
  const __m512 eps = _mm512_set1_ps(k.eps), step = _mm512_set1_ps(k.step_size);
  const __m512 inv_bc2 = _mm512_set1_ps(k.inv_sqrt_bc2), kp = _mm512_set1_ps(keep);
  for (; i + 16 <= end; i += 16) {
    const __m512 gi = _mm512_loadu_ps(g + i);
    const __m512 mi = _mm512_fmadd_ps(b1, _mm512_loadu_ps(m + i), _mm512_mul_ps(c1, gi));
    const __m512 vi = _mm512_fmadd_ps(b2, _mm512_loadu_ps(v + i), _mm512_mul_ps(_mm512_mul_ps(c2, gi), gi));
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    const __m512 denom = _mm512_fmadd_ps(_mm512_mask_sqrt_ps(vi, 0xFFFF, vi), inv_bc2, eps);  // masked form: GCC 12 warns on the unmasked one
    const __m512 upd = _mm512_div_ps(_mm512_mul_ps(mi, step), denom);
    _mm512_storeu_ps(p + i, _mm512_fmsub_ps(_mm512_loadu_ps(p + i), kp, upd));
  }
#endif
  for (; i < end; ++i) {
    float gi = g[i];
    float mi = std::fma(k.beta1, m[i], (1.0f - k.beta1) * gi);
    float vi = std::fma(k.beta2, v[i], (1.0f - k.beta2) * gi * gi);
    m[i] = mi;
    v[i] = vi;
    float denom = std::fma(std::sqrt(vi), k.inv_sqrt_bc2, k.eps);
    p[i] = std::fma(p[i], keep, -(mi * k.step_size) / denom);
  }
}

// Index of the range containing element i (ranges tile [0, size) in order).
size_t range_index(const DecayMask& mask, int64_t i) {
  auto it = std::upper_bound(mask.ranges.begin(), mask.ranges.end(), i,
                             [](int64_t x, const DecayRange& r) { return x < r.offset; });
  return static_cast<size_t>(it - mask.ranges.begin()) - 1;
}

}  // namespace

DecayMask decay_mask_build(std::vector<DecayRange> ranges, int64_t size) {
  if (size < 0) fail("decay mask: parameter count {} is negative", size);
  std::sort(ranges.begin(), ranges.end(),
            [](const DecayRange& a, const DecayRange& b) { return a.offset < b.offset; });
  DecayMask mask;
  mask.size = size;
  int64_t next = 0;  // first element not yet covered
  for (const DecayRange& r : ranges) {
    if (r.count < 0) fail("decay mask: range at offset {} has negative count {}", r.offset, r.count);
    if (r.count == 0) continue;
    if (r.offset < next) {
      fail("decay mask: range [{}, {}) overlaps the previous range ending at {}", r.offset,
           r.offset + r.count, next);
    }
    if (r.offset > next) {
      fail("decay mask: parameters [{}, {}) are not covered by any range", next, r.offset);
    }
    if (!mask.ranges.empty() && mask.ranges.back().decay == r.decay) {
      mask.ranges.back().count += r.count;
    } else {
      mask.ranges.push_back(r);
    }
    next = r.offset + r.count;
  }
  if (next != size) {
    fail("decay mask: ranges cover [0, {}) but there are {} parameters", next, size);
  }
  return mask;
}

AdamWStep adamw_step_make(const OptimConfig& config, double lr, int64_t t) {
  AdamWStep s;
  s.lr = lr;
  s.beta1 = config.beta1;
  s.beta2 = config.beta2;
  s.eps = config.eps;
  s.weight_decay = config.weight_decay;
  s.t = t;
  return s;
}

void adamw_update(const AdamWStep& step, const DecayMask& mask, float* params, const float* grads,
                  float* m, float* v, int64_t n) {
  RFA_ASSERT(mask.size == n, "decay mask covers {} parameters, update has {}", mask.size, n);
  const AdamWScalars k = scalars_make(step);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  parallel_for(blocks, [&](int64_t b) {
    int64_t begin = b * kBlock, end = std::min(n, begin + kBlock);
    for (size_t r = range_index(mask, begin); begin < end; ++r) {
      const DecayRange& range = mask.ranges[r];
      int64_t stop = std::min(end, range.offset + range.count);
      adamw_segment(k, range.decay ? k.keep_decay : 1.0f, params, grads, m, v, begin, stop);
      begin = stop;
    }
  });
}

void adamw_update_reference(const AdamWStep& s, const DecayMask& mask, float* params, const float* grads,
                            float* m, float* v, int64_t n) {
  RFA_ASSERT(mask.size == n, "decay mask covers {} parameters, update has {}", mask.size, n);
  double bc1 = 1.0 - std::pow(s.beta1, static_cast<double>(s.t));
  double bc2 = 1.0 - std::pow(s.beta2, static_cast<double>(s.t));
  for (const DecayRange& r : mask.ranges) {
    for (int64_t i = r.offset; i < r.offset + r.count; ++i) {
      double p = params[i], g = grads[i];
      if (r.decay) p -= s.lr * s.weight_decay * p;
      double mi = s.beta1 * m[i] + (1 - s.beta1) * g;
      double vi = s.beta2 * v[i] + (1 - s.beta2) * g * g;
      p -= s.lr * (mi / bc1) / (std::sqrt(vi / bc2) + s.eps);
      params[i] = static_cast<float>(p);
      m[i] = static_cast<float>(mi);
      v[i] = static_cast<float>(vi);
    }
  }
}

}  // namespace rfa
