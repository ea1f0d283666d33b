// step_gemm (step_gemm.h): register tiles of RB rows by NB columns whose every element is
// computed by the one expression sequence below, so that which tile (or tail tile) an element
// falls in, which depends on M, changes nothing. Columns outer (a tile's W stays in L1 while
// every row block passes), rows inner; threads take blocks of columns.
#include "kernels/step_gemm.h"

#include <algorithm>

#include "core/parallel.h"
#include "kernels/vector_math.h"

namespace rfa {
namespace {

using V = Simd<float>::V;
constexpr int kW = Simd<float>::W;
// Rows per tile. dot tiles (trans): 4 rows x 4 columns = 16 accumulators + 4 + 1 registers where
// there are 32 (AVX-512, arm64); 3 x 4 = 12 + 3 + 1 = 16 where there are 16 (AVX2). axpy tiles
// (!trans): 4 x 4 registers of columns + 4 + 1 with 32; 2 x 4 + 4 + 1 with 16, so nothing spills.
constexpr int kRows = kVectorRegisters >= 32 ? 4 : 3;
constexpr int kAxpyRows = kVectorRegisters >= 32 ? 4 : 2;
constexpr int kCols = 4;        // W rows (trans) per tile
constexpr int kVecCols = 4;     // registers of columns (!trans) per tile
constexpr int64_t kColumnsPerTask = 64;

// The lane sums of 16 registers of 16 floats, each exactly simd_sum's (halves folded 512 -> 256
// -> 128 bits, then 0 + l0 + l1 + l2 + l3 in that order), for 47 vector operations instead of 16
// x 10: the same additions, two or four registers' lanes side by side in each. out[i] = acc i,
// acc taken row-major from a [4][4] tile.
#if RFA_FLOAT_LANES == 16
inline void lane_sums_16(const V (&acc)[4][4], float* out) {
  {
    typedef int I __attribute__((vector_size(64)));
    const V* a = &acc[0][0];
    V c[8], e[4];
    for (int p = 0; p < 8; ++p)  // [a.lo256 + a.hi256 | b.lo256 + b.hi256]
      c[p] = __builtin_shuffle(a[2 * p], a[2 * p + 1], I{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23}) +
             __builtin_shuffle(a[2 * p], a[2 * p + 1], I{8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31});
    for (int p = 0; p < 4; ++p)  // four registers' 128-bit folds
      e[p] = __builtin_shuffle(c[2 * p], c[2 * p + 1], I{0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27}) +
             __builtin_shuffle(c[2 * p], c[2 * p + 1], I{4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31});
    // t[l][i] = lane l of register i's fold: e[i / 4] holds registers 4 (i / 4) .. + 3, 4 lanes each.
    V t[4];
    for (int l = 0; l < 4; ++l) {
      const I pick{l, l + 4, l + 8, l + 12, l + 16, l + 20, l + 24, l + 28, 0, 0, 0, 0, 0, 0, 0, 0};
      const V u = __builtin_shuffle(e[0], e[1], pick), v = __builtin_shuffle(e[2], e[3], pick);
      t[l] = __builtin_shuffle(u, v, I{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23});
    }
    const V s = (((V{} + t[0]) + t[1]) + t[2]) + t[3];
    simd_store(out, s);
  }
}
#endif

// trans: out[r, j] for r < RB, j < NB; x rows and W rows of length K.
template <int RB, int NB>
void dot_tile(const float* x, const float* W, int64_t K, float* out, int64_t N, bool accumulate) {
  V acc[RB][NB];
#pragma GCC unroll 4
  for (int r = 0; r < RB; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) acc[r][j] = V{};
  int64_t k = 0;
  for (; k + kW <= K; k += kW) {
    // RB + NB loads for RB NB FMAs. The empty asm pins each loaded vector in a register: GCC
    // otherwise reloaded x for every column and folded W into the FMAs (2 loads an FMA, half
    // the FMA rate on the load ports).
    V xv[RB];
#pragma GCC unroll 4
    for (int r = 0; r < RB; ++r) {
      xv[r] = simd_load(x + r * K + k);
      asm("" : "+v"(xv[r]));
    }
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      V wj = simd_load(W + j * K + k);
      asm("" : "+v"(wj));
#pragma GCC unroll 4
      for (int r = 0; r < RB; ++r) acc[r][j] += xv[r] * wj;
    }
  }
  float sums[RB][NB];
#if RFA_FLOAT_LANES == 16
  if constexpr (RB == 4 && NB == 4) {
    lane_sums_16(acc, &sums[0][0]);
  } else
#endif
  {
    for (int r = 0; r < RB; ++r)
      for (int j = 0; j < NB; ++j) sums[r][j] = simd_sum<float>(acc[r][j]);
  }
  for (int r = 0; r < RB; ++r)
    for (int j = 0; j < NB; ++j) {
      float s = sums[r][j];
      for (int64_t t = k; t < K; ++t) s += x[r * K + t] * W[j * K + t];
      float& o = out[r * N + j];
      o = accumulate ? o + s : s;
    }
}

// f.template operator()<n>() for n in 1..4: each tail width of a tile its own instantiation.
template <typename F>
void with_width(int n, F&& f) {
  switch (n) {
    case 4: return f.template operator()<4>();
    case 3: return f.template operator()<3>();
    case 2: return f.template operator()<2>();
    default: return f.template operator()<1>();
  }
}

template <int RB>
void dot_rows(const float* x, const float* W, int64_t K, float* out, int64_t N, int nb, bool accumulate) {
  with_width(nb, [&]<int NB>() { dot_tile<RB, NB>(x, W, K, out, N, accumulate); });
}

// Columns [j0, j1) of out = x · Wᵀ, W stored (N, K): blocks of 16 columns by 16 rows, whose
// W and x rows (2 x 16 K floats, 48 KB at K 384) stay in L1 while their tiles run.
void dot_columns(int64_t M, int64_t N, int64_t K, const float* x, const float* W, float* out, bool accumulate,
                 int64_t j0, int64_t j1) {
  constexpr int64_t kBlock = 16;
  for (int64_t jb = j0; jb < j1; jb += kBlock) {
    const int64_t je = std::min(j1, jb + kBlock);
    for (int64_t mb = 0; mb < M; mb += kBlock) {
      const int64_t me = std::min(M, mb + kBlock);
      for (int64_t j = jb; j < je; j += kCols) {
        const int nb = static_cast<int>(std::min<int64_t>(kCols, je - j));
        int64_t m = mb;
        for (; m + kRows <= me; m += kRows)
          dot_rows<kRows>(x + m * K, W + j * K, K, out + m * N + j, N, nb, accumulate);
        for (; m < me; ++m) dot_rows<1>(x + m * K, W + j * K, K, out + m * N + j, N, nb, accumulate);
      }
    }
  }
}

// !trans: out[r, j0 + v kW + l] for r < RB, v < NV: one chain per element over k in order.
template <int RB, int NV>
void axpy_tile(const float* x, int64_t K, const float* W, int64_t N, float* out, bool accumulate) {
  V acc[RB][NV];
#pragma GCC unroll 4
  for (int r = 0; r < RB; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  for (int64_t k = 0; k < K; ++k) {
    V w[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) w[v] = simd_load(W + k * N + v * kW);
#pragma GCC unroll 4
    for (int r = 0; r < RB; ++r) {
      const float xr = x[r * K + k];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] += xr * w[v];
    }
  }
  for (int r = 0; r < RB; ++r)
    for (int v = 0; v < NV; ++v) {
      float* o = out + r * N + v * kW;
      simd_store(o, accumulate ? V(simd_load(o)) + acc[r][v] : acc[r][v]);
    }
}

template <int RB>
void axpy_rows(const float* x, int64_t K, const float* W, int64_t N, float* out, int nv, bool accumulate) {
  with_width(nv, [&]<int NV>() { axpy_tile<RB, NV>(x, K, W, N, out, accumulate); });
}

// Columns [j0, j1) of out = x · W, W stored (K, N); j0 a multiple of kW. Whole registers of
// columns, then the last N % kW columns one at a time with the same chain in scalar.
void axpy_columns(int64_t M, int64_t N, int64_t K, const float* x, const float* W, float* out, bool accumulate,
                  int64_t j0, int64_t j1) {
  const int64_t whole = j0 + (j1 - j0) / kW * kW;
  for (int64_t j = j0; j < whole; j += kVecCols * kW) {
    const int nv = static_cast<int>(std::min<int64_t>(kVecCols, (whole - j) / kW));
    int64_t m = 0;
    for (; m + kAxpyRows <= M; m += kAxpyRows) axpy_rows<kAxpyRows>(x + m * K, K, W + j, N, out + m * N + j, nv, accumulate);
    for (; m < M; ++m) axpy_rows<1>(x + m * K, K, W + j, N, out + m * N + j, nv, accumulate);
  }
  for (int64_t j = whole; j < j1; ++j)
    for (int64_t m = 0; m < M; ++m) {
      float s = 0;
      for (int64_t k = 0; k < K; ++k) s += x[m * K + k] * W[k * N + j];
      float& o = out[m * N + j];
      o = accumulate ? o + s : s;
    }
}

}  // namespace

template <>
void step_gemm<float>(bool trans_w, int64_t M, int64_t N, int64_t K, const float* x, const float* W, float* out,
                      bool accumulate, GemmThreads threads) {
  if (M <= 0 || N <= 0) return;
  // Tasks of kColumnsPerTask columns (a multiple of kW and of kCols: no task boundary moves a
  // column between the whole-register and the tail code).
  const int64_t tasks = (N + kColumnsPerTask - 1) / kColumnsPerTask;
  auto task = [&](int64_t t) {
    const int64_t j0 = t * kColumnsPerTask, j1 = std::min(N, j0 + kColumnsPerTask);
    if (trans_w)
      dot_columns(M, N, K, x, W, out, accumulate, j0, j1);
    else
      axpy_columns(M, N, K, x, W, out, accumulate, j0, j1);
  };
  // Below kParallelMinWork multiply-adds (a 384 x 384 projection of one row) waking the pool
  // costs about what it saves.
  if (threads == GemmThreads::one || tasks < 2 || M * N * K < kParallelMinWork) {
    for (int64_t t = 0; t < tasks; ++t) task(t);
  } else {
    parallel_for(tasks, task);
  }
}

template <>
void step_gemm<double>(bool trans_w, int64_t M, int64_t N, int64_t K, const double* x, const double* W, double* out,
                       bool accumulate, GemmThreads) {
  gemm_reference<double>(false, trans_w, M, N, K, 1.0, x, K, W, trans_w ? K : N, accumulate ? 1.0 : 0.0, out, N);
}

}  // namespace rfa
