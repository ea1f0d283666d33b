#include "optim/adamw.h"

#include <algorithm>
#include <cmath>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "core/error.h"
#include "core/parallel.h"
#include "core/step_profile.h"

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

// lr_scale: a range's factor on the learning rate (1: the step's own scalars, bit for bit).
AdamWScalars scalars_make(const AdamWStep& s, double lr_scale = 1) {
  RFA_ASSERT(s.t >= 1, "AdamW step counter t starts at 1, got {}", s.t);
  const double lr = s.lr * lr_scale;
  double bc1 = 1.0 - std::pow(s.beta1, static_cast<double>(s.t));
  double bc2 = 1.0 - std::pow(s.beta2, static_cast<double>(s.t));
  return {static_cast<float>(s.beta1), static_cast<float>(s.beta2), static_cast<float>(s.eps),
          static_cast<float>(lr / bc1), static_cast<float>(1.0 / std::sqrt(bc2)),
          static_cast<float>(1.0 - lr * s.weight_decay)};
}

// The vector instructions of the build's target (RFA_ARCH) that the update needs,
// each rounding exactly like its scalar twin (fused multiply-adds, a correctly
// rounded sqrt and division). None on a target without vector FMA (plain SSE2):
// there the scalar loop runs alone.
#if defined(__AVX512F__)
struct VectorOps {
  using V = __m512;
  static constexpr int W = 16;
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V x) { _mm512_storeu_ps(p, x); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }  // a b + c
  static V fmsub(V a, V b, V c) { return _mm512_fmsub_ps(a, b, c); }  // a b - c
  static V sqrt(V a) { return _mm512_mask_sqrt_ps(a, 0xFFFF, a); }  // masked form: GCC 12 warns on the unmasked one
};
#define RFA_ADAMW_VECTOR 1
#elif defined(__AVX2__) && defined(__FMA__)
struct VectorOps {
  using V = __m256;
  static constexpr int W = 8;
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V x) { _mm256_storeu_ps(p, x); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V fmsub(V a, V b, V c) { return _mm256_fmsub_ps(a, b, c); }
  static V sqrt(V a) { return _mm256_sqrt_ps(a); }
};
#define RFA_ADAMW_VECTOR 1
#elif defined(__aarch64__)
struct VectorOps {
  using V = float32x4_t;
  static constexpr int W = 4;
  static V set1(float x) { return vdupq_n_f32(x); }
  static V load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, V x) { vst1q_f32(p, x); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V div(V a, V b) { return vdivq_f32(a, b); }
  static V fmadd(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V fmsub(V a, V b, V c) { return vnegq_f32(vfmsq_f32(c, a, b)); }  // -(c - a b), exact negation
  static V sqrt(V a) { return vsqrtq_f32(a); }
};
#define RFA_ADAMW_VECTOR 1
#endif

// The raw kernel over [begin, end) with one decay multiplier. Explicit vector
// instructions, written when std::sqrt's errno check kept the plain loop scalar
// (the build now has -fno-math-errno). Both paths compute
//   m = fma(b1, m, (1-b1) g),  v = fma(b2, v, ((1-b2) g) g),
//   p = fma(p, keep, -(step m) / fma(sqrt(v), inv_sqrt_bc2, eps))
// with the same roundings (the vector sqrt rounds like the scalar one), so the
// split between them does not change a single bit, and neither does the width.
void adamw_segment(const AdamWScalars& k, float keep, float* __restrict p, const float* __restrict g,
                   float* __restrict m, float* __restrict v, int64_t begin, int64_t end) {
  int64_t i = begin;
#ifdef RFA_ADAMW_VECTOR
  using O = VectorOps;
  const O::V b1 = O::set1(k.beta1), b2 = O::set1(k.beta2);
  const O::V c1 = O::set1(1.0f - k.beta1), c2 = O::set1(1.0f - k.beta2);
  const O::V eps = O::set1(k.eps), step = O::set1(k.step_size);
  const O::V inv_bc2 = O::set1(k.inv_sqrt_bc2), kp = O::set1(keep);
  for (; i + O::W <= end; i += O::W) {
    const O::V gi = O::load(g + i);
    const O::V mi = O::fmadd(b1, O::load(m + i), O::mul(c1, gi));
    const O::V vi = O::fmadd(b2, O::load(v + i), O::mul(O::mul(c2, gi), gi));
    O::store(m + i, mi);
    O::store(v + i, vi);
    const O::V denom = O::fmadd(O::sqrt(vi), inv_bc2, eps);
    const O::V upd = O::div(O::mul(mi, step), denom);
    O::store(p + i, O::fmsub(O::load(p + i), kp, upd));
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
    if (r.lr_scale <= 0)
      fail("decay mask: range at offset {} has learning-rate factor {}; it must be positive", r.offset, r.lr_scale);
    if (!mask.ranges.empty() && mask.ranges.back().decay == r.decay && mask.ranges.back().lr_scale == r.lr_scale) {
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
  // reads p, g, m, v and writes p, m, v; about 12 flop per parameter (with the sqrt and division)
  ProfileScope profile(ProfiledKernel::optimizer, 12.0 * double(n), sizeof(float) * 7.0 * double(n));
  const AdamWScalars k = scalars_make(step);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  parallel_for(blocks, [&](int64_t b) {
    int64_t begin = b * kBlock, end = std::min(n, begin + kBlock);
    for (size_t r = range_index(mask, begin); begin < end; ++r) {
      const DecayRange& range = mask.ranges[r];
      int64_t stop = std::min(end, range.offset + range.count);
      const AdamWScalars kr = range.lr_scale == 1 ? k : scalars_make(step, range.lr_scale);
      adamw_segment(kr, range.decay ? kr.keep_decay : 1.0f, params, grads, m, v, begin, stop);
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
    const double lr = s.lr * r.lr_scale;
    for (int64_t i = r.offset; i < r.offset + r.count; ++i) {
      double p = params[i], g = grads[i];
      if (r.decay) p -= lr * s.weight_decay * p;
      double mi = s.beta1 * m[i] + (1 - s.beta1) * g;
      double vi = s.beta2 * v[i] + (1 - s.beta2) * g * g;
      p -= lr * (mi / bc1) / (std::sqrt(vi / bc2) + s.eps);
      params[i] = static_cast<float>(p);
      m[i] = static_cast<float>(mi);
      v[i] = static_cast<float>(vi);
    }
  }
}

}  // namespace rfa
