#pragma once
// One vector register of the build's target: its width and count (RFA_ARCH), the register
// type Simd<T> with its loads and stores (whole, or the first lanes of one), and a register's
// sum and largest lane. The row kernels built on it: kernels/vector_math.h.
#include <cstddef>
#include <utility>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace rfa {

// The build's vector register (RFA_ARCH, CMakeLists.txt): 64 bytes with AVX-512,
// 32 with AVX2, 16 with SSE2 or NEON. Every hand-written kernel takes its width
// and its register tiles from here, so that the accumulators of a tile fit the
// register file of the target (a 64-byte vector on AVX2 is two ymm registers,
// and a tile sized for 32 zmm spills to the stack).
#if defined(__AVX512F__)
inline constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
inline constexpr int kVectorBytes = 32;
#else
inline constexpr int kVectorBytes = 16;
#endif
// The same width in floats, as a literal for OpenMP clauses: `RFA_OMP_SIMD_FULL` is `omp simd`
// at the build's whole vector width. GCC's vectoriser prefers 32-byte registers on AVX-512
// CPUs (-mprefer-vector-width=256 is its default for them), which halves the row loops with
// an exp or a sine next to the tiles' 64-byte ones; simdlen asks for the full register.
// On AVX2 and below it is the width the vectoriser picks anyway.
#if defined(__AVX512F__)
#define RFA_FLOAT_LANES 16
#elif defined(__AVX__)
#define RFA_FLOAT_LANES 8
#else
#define RFA_FLOAT_LANES 4
#endif
#define RFA_PRAGMA(x) _Pragma(#x)
#define RFA_OMP_SIMD_FULL RFA_PRAGMA(omp simd simdlen(RFA_FLOAT_LANES))
// Architectural vector registers: 32 with AVX-512 (zmm0-31) and on arm64 (v0-31), else 16.
#if defined(__AVX512F__) || defined(__aarch64__)
inline constexpr int kVectorRegisters = 32;
#else
inline constexpr int kVectorRegisters = 16;
#endif

// One SIMD register of T (GCC/Clang vector extension): explicit, so the
// accumulators below live in registers rather than in stack arrays.
template <typename T>
struct Simd {
  typedef T V __attribute__((vector_size(kVectorBytes)));
  typedef T U __attribute__((vector_size(kVectorBytes), aligned(alignof(T)), may_alias));  // unaligned access
  static constexpr int W = kVectorBytes / int(sizeof(T));
};
// The helpers take and give registers by reference, never by value: a vector
// wider than the baseline ISA's has one calling convention where the wide
// registers exist and another without (memory), so an out-of-line copy compiled
// for another target would not match, and GCC warns (-Wpsabi) wherever such a
// signature is compiled. Inlined, the code is the same.
template <typename T>
inline const typename Simd<T>::U& simd_load(const T* p) {
  return *reinterpret_cast<const typename Simd<T>::U*>(p);
}
template <typename T>
inline void simd_store(T* p, const typename Simd<T>::V& v) {
  *reinterpret_cast<typename Simd<T>::U*>(p) = v;
}

namespace simd_detail {
// Folds a Bytes-wide vector down to 16 bytes, halving (the halves added, or with kMax their larger
// lanes kept), in registers: __builtin_shufflevector names the halves. (Copied out through memory,
// GCC stored a 64-byte register to the stack and loaded its 32-byte halves back, which does not
// store-forward: most of the RFA backward's l2_normalize_backward time at nano on AVX-512. Builds
// of 32-byte vectors had folded in registers already.)
template <typename T, int Bytes, bool kMax>
struct Fold {
  typedef T Vec __attribute__((vector_size(Bytes)));
  typedef T Half __attribute__((vector_size(Bytes / 2)));
  typedef T Quarter __attribute__((vector_size(16)));
  static constexpr size_t kHalfLanes = Bytes / 2 / sizeof(T);
  template <size_t... I>
  static Quarter run(const Vec& v, std::index_sequence<I...>) {
    const Half lo = __builtin_shufflevector(v, v, I...), hi = __builtin_shufflevector(v, v, (I + kHalfLanes)...);
    Half h;
    if constexpr (kMax) h = hi > lo ? hi : lo;
    else h = lo + hi;
    if constexpr (Bytes / 2 == 16) return h;
    else return Fold<T, Bytes / 2, kMax>::run(h, std::make_index_sequence<kHalfLanes / 2>{});
  }
};
template <typename T, bool kMax>
inline typename Fold<T, 16, kMax>::Vec fold_to_16(const typename Simd<T>::V& v) {
  if constexpr (kVectorBytes == 16) return v;
  else return Fold<T, kVectorBytes, kMax>::run(v, std::make_index_sequence<kVectorBytes / 2 / sizeof(T)>{});
}
}  // namespace simd_detail

// Sum of a register's lanes: fold halves down to 128 bits, then those lanes in
// scalar (for 64 bytes the same order as before the width became a choice).
template <typename T>
inline T simd_sum(const typename Simd<T>::V& v) {
  const auto q = simd_detail::fold_to_16<T, false>(v);
  T s = 0;
  for (int l = 0; l < int(16 / sizeof(T)); ++l) s += q[l];
  return s;
}

// Largest of a register's lanes (NaN lanes aside): halves folded down to 128 bits, then those
// lanes in scalar; a chain of W scalar compares was the softmax rows' longest latency at 16 lanes.
template <typename T>
inline T simd_max(const typename Simd<T>::V& v) {
  const auto q = simd_detail::fold_to_16<T, true>(v);
  T r = q[0];
  for (int l = 1; l < int(16 / sizeof(T)); ++l) r = q[l] > r ? q[l] : r;
  return r;
}

// The first `count` lanes (0 <= count < W) of a register: stored at p, or loaded from p with
// the others 0, touching no element past p[count - 1]. AVX-512: one masked instruction; else
// lane by lane over a fixed W, each lane's store behind its test. (A plain loop to count is
// turned into a memcpy or memset call, which costs more than the row at these lengths.)
template <typename T>
inline void simd_store_first(T* p, const typename Simd<T>::V& v, int count) {
#if defined(__AVX512F__)
  if constexpr (sizeof(T) == 4) return _mm512_mask_storeu_ps(p, __mmask16((1u << count) - 1), __m512(v));
  if constexpr (sizeof(T) == 8) return _mm512_mask_storeu_pd(p, __mmask8((1u << count) - 1), __m512d(v));
#endif
#pragma GCC unroll 16
  for (int l = 0; l < Simd<T>::W; ++l)
    if (l < count) p[l] = v[l];
}
template <typename T>
inline typename Simd<T>::V simd_load_first(const T* p, int count) {
#if defined(__AVX512F__)
  if constexpr (sizeof(T) == 4) return typename Simd<T>::V(_mm512_maskz_loadu_ps(__mmask16((1u << count) - 1), p));
  if constexpr (sizeof(T) == 8) return typename Simd<T>::V(_mm512_maskz_loadu_pd(__mmask8((1u << count) - 1), p));
#endif
  typename Simd<T>::V v{};
#pragma GCC unroll 16
  for (int l = 0; l < Simd<T>::W; ++l)
    if (l < count) v[l] = p[l];
  return v;
}

}  // namespace rfa
