// step_gemm (step_gemm.h): register tiles of R rows by NV registers of a panel's columns, every
// element the one chain the header gives whatever tile holds it, so which tile shape a row gets
// (which depends on M and on its place) changes no bit. Tiles of kRowsPerTile rows sweep a column
// block of the panel while it stays in L1; a block's last 1 or 2 rows take thin tiles as wide as
// the panel, so that a single row still runs 8 independent chains (4-cycle FMAs on 2 ports).
#include "kernels/step_gemm.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/vector_math.h"

namespace rfa {
namespace {

using V = Simd<float>::V;
constexpr int kW = Simd<float>::W;
constexpr int kPanelVectors = 8;
constexpr int64_t kPanel = int64_t(kPanelVectors) * kW;
// Main tiles: 6 rows x 4 registers = 24 accumulators + 4 + 1 where there are 32 vector registers
// (AVX-512, arm64), 6 x 2 = 12 + 2 + 1 where there are 16 (AVX2): nothing spills, and 6 broadcasts
// + NV loads feed 6 NV multiply-adds.
constexpr int kRowsPerTile = 6;
constexpr int kVectorsPerTile = kVectorRegisters >= 32 ? 4 : 2;
// Thin tiles: 1 row x 8 registers; 2 rows x 8 (32 registers) or x 4 (16).
constexpr int thin_vectors(int rows) { return rows == 1 || kVectorRegisters >= 32 ? 8 : 4; }
constexpr int max_vectors(int rows) { return rows <= 2 ? thin_vectors(rows) : kVectorsPerTile; }

// Tiles of several rows ask for their weights this far ahead in L1 (each cache line of the tile's
// part of the panel's row k + ahead): a decode step reads every matrix once, from memory, and a
// tile reads part of each row (6 x 4 registers: half of a 512-byte row), which the hardware's
// prefetch followed badly. `rfa bench decode`, 6x384, Zen 5, alternating: 8 rows 1.41-1.55 ->
// 1.26-1.32 ms a step (native), 2.94-3.23 -> 2.02-2.05 (x86-64-v3); 64 rows unchanged (native),
// 12.0-12.1 -> 10.8-11.2 (x86-64-v3). One row's tiles read whole rows in order and are left to
// the hardware: asked for too, they were 3-12% slower. In bytes: the same distance in time for
// both panel widths. And at least kPrefetchOwnBytes of the tile's own columns ahead, so that enough
// lines are in flight: an AVX2 main tile's 2 registers are one cache line of each 256-byte panel row,
// and 32 rows ahead kept only 32 lines in flight where the AVX-512 tile keeps 64 (`rfa bench decode`,
// 6x384, x86-64-v3, ten alternating rounds in both orders, medians: 4 rows 1.36 / 1.47 -> 1.20 / 1.27
// ms a step, 8 rows 2.19 / 2.10 -> 1.88 / 1.91; 16 and 64 rows within the noise). A two-row tile's 128
// bytes a row already had 64 lines in flight, and AVX-512's tiles keep their distance.
constexpr int64_t kPrefetchBytes = 8192;
constexpr int64_t kPrefetchOwnBytes = 4096;
constexpr int kLineFloats = 16;  // a 64-byte cache line

// The next task's panel prefetched into L2 (WeightsFrom::memory): where it paid. Measured on Zen 5,
// 6x384 decode steps (43 MB of weights from memory), x86-64-v3: one thread pinned, 2 / 4 / 8 / 16
// rows 1.46 / 2.25 / 3.29 / 5.09 -> 1.35 / 1.58 / 2.64 / 4.82 ms (minimum of five alternating
// runs; 4 / 8 rows 2.44 / 3.99 -> 1.89 / 3.10, medians of six, an hour later); two threads, both
// streaming, 4 / 8 / 12 rows 1.28 / 2.04 / 2.56 -> 1.10 / 1.71 / 2.33 ms (medians of eight) in one
// hour, no faster in another, and 16 rows 2.69 -> 2.87. On AVX-512 (32 registers, tiles twice as
// wide) it was mixed: one thread, 2 rows 12% slower, 4-16 rows 3-7% faster. From 16 rows the
// products are bound by their multiply-adds; a panel of more than 256 KB (two of them no longer
// sit in L2 beside the rest) gained nothing (K 1024, AVX-512).
constexpr bool kPrefetchNextPanel = kVectorRegisters < 32;
constexpr int64_t kNextPanelRowsMin = 2, kNextPanelRowsMax = 12;
constexpr int64_t kNextPanelBytesMax = int64_t(256) << 10;

// A tile's share of the next panel's prefetches: `count` lines from `lines`, `rate` each iteration
// over k (none: count 0).
struct PanelPrefetch {
  const char* lines = nullptr;
  int64_t count = 0, rate = 0;
};

// An empty asm that takes v in a vector register and may change it, so the compiler must load it
// there once and cannot fold the load into each use. The constraint names the architecture's
// vector registers: "v" on x86 (any xmm/ymm/zmm), "w" on arm64 ("v" there is no register class:
// GCC refuses the arm64 build with "impossible constraint"); elsewhere nothing.
inline void keep_in_register([[maybe_unused]] V& v) {
#if defined(__x86_64__) || defined(__i386__)
  asm("" : "+v"(v));
#elif defined(__aarch64__)
  asm("" : "+w"(v));
#endif
}

// out[r, v kW + l] for r < R, v < NV, of which the first `cols` columns are stored: w is the panel
// at the tile's first column, P the panel's width (its row stride), x the tile's first row.
// Not inlined: a tile alone keeps its accumulators in registers (inlined into the sweeps, GCC
// kept them on the stack).
// kNext: with the next panel's share of prefetches (a tile of its own: the plain tile's loop is
// the one it was without them, which an idle check in it slowed by 2-8% on AVX2).
template <int R, int NV, bool kNext>
__attribute__((noinline)) void tile(const float* x, int64_t K, const float* w, int64_t P, float* out, int64_t N, int64_t cols,
          bool accumulate, [[maybe_unused]] PanelPrefetch next) {
  V acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  const int64_t ahead = std::max(kPrefetchBytes / (int64_t(sizeof(float)) * P),  // rows of the panel
                                 kPrefetchOwnBytes / (int64_t(sizeof(float)) * NV * kW));
  for (int64_t k = 0; k < K; ++k) {
    const float* wk = w + k * P;
    if constexpr (kNext)
      if (k * next.rate < next.count)
        for (int64_t i = k * next.rate; i < std::min(next.count, (k + 1) * next.rate); ++i)
          __builtin_prefetch(next.lines + i * 64, 0, 2);
    if (R > 1 && k + ahead < K)
#pragma GCC unroll 8
      for (int c = 0; c < (NV * kW + kLineFloats - 1) / kLineFloats; ++c)
        __builtin_prefetch(wk + ahead * P + c * kLineFloats, 0, 3);
    V wv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      // Several rows read each register: the empty asm keeps it loaded once (GCC otherwise folds
      // the load into every row's multiply-add, R loads a register). On a copy: on the array's
      // element GCC also stored every register to the stack.
      V loaded = simd_load(wk + v * kW);
      if constexpr (R > 2) keep_in_register(loaded);
      wv[v] = loaded;
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const float xr = x[r * K + k];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] += xr * wv[v];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      float* o = out + r * N + v * kW;
      const int64_t n = std::min<int64_t>(kW, cols - int64_t(v) * kW);
      if (n == kW) {
        simd_store(o, accumulate ? V(simd_load(o)) + acc[r][v] : acc[r][v]);
      } else if (n > 0) {  // the last register of the last panel: its first n columns
        const int first = static_cast<int>(n);
        simd_store_first(o, accumulate ? simd_load_first(o, first) + acc[r][v] : acc[r][v], first);
      }
    }
}

// tile<R, nv> with nv in [1, max_vectors(R)].
template <int R, bool kNext, int NV = 1>
void tile_of_width(int nv, const float* x, int64_t K, const float* w, int64_t P, float* out, int64_t N, int64_t cols,
                   bool accumulate, PanelPrefetch next) {
  if constexpr (NV < max_vectors(R))
    if (nv > NV) return tile_of_width<R, kNext, NV + 1>(nv, x, K, w, P, out, N, cols, accumulate, next);
  tile<R, NV, kNext>(x, K, w, P, out, N, cols, accumulate, next);
}

// Rows [m0, m1) by registers [v0, v1) of the panel starting at column j0 (its width P floats,
// `width` columns real). next (next_floats): a panel to prefetch into L2 meanwhile, its lines
// spread evenly over the tiles' iterations; null: none.
template <bool kNext>
void panel_rows(int64_t m0, int64_t m1, int64_t v0, int64_t v1, int64_t N, int64_t K, const float* x,
                const float* panel, int64_t P, int64_t j0, int64_t width, float* out, bool accumulate,
                const float* next, int64_t next_floats) {
  const int64_t whole = m0 + (m1 - m0) / kRowsPerTile * kRowsPerTile;
  const int rest = static_cast<int>(m1 - whole);
  // kNext: the next panel's lines shared evenly over every tile's iterations.
  int64_t lines = 0, rate = 0, issued = 0;
  if constexpr (kNext) {
    auto groups = [&](int per_tile) { return (v1 - v0 + per_tile - 1) / per_tile; };
    const int64_t tiles =
        (whole - m0) / kRowsPerTile * groups(kVectorsPerTile) + (rest > 0 ? groups(max_vectors(rest)) : 0);
    lines = (next_floats + kLineFloats - 1) / kLineFloats;
    rate = tiles > 0 && K > 0 ? (lines + tiles * K - 1) / (tiles * K) : 0;
  }
  auto sweep = [&]<int R>(int64_t m, int64_t step, int64_t m_end, int per_tile) {
    for (int64_t v = v0; v < v1; v += per_tile) {
      const int nv = static_cast<int>(std::min<int64_t>(per_tile, v1 - v));
      for (int64_t r = m; r < m_end; r += step) {
        PanelPrefetch ahead;
        if constexpr (kNext) {
          const int64_t share = std::min(lines - issued, rate * K);
          ahead = {reinterpret_cast<const char*>(next) + issued * 64, share, rate};
          issued += share;
        }
        tile_of_width<R, kNext>(nv, x + r * K, K, panel + v * kW, P, out + r * N + j0 + v * kW, N, width - v * kW,
                                accumulate, ahead);
      }
    }
  };
  sweep.template operator()<kRowsPerTile>(m0, kRowsPerTile, whole, kVectorsPerTile);
  switch (rest) {
    case 5: return sweep.template operator()<5>(whole, 5, m1, max_vectors(5));
    case 4: return sweep.template operator()<4>(whole, 4, m1, max_vectors(4));
    case 3: return sweep.template operator()<3>(whole, 3, m1, max_vectors(3));
    case 2: return sweep.template operator()<2>(whole, 2, m1, max_vectors(2));
    case 1: return sweep.template operator()<1>(whole, 1, m1, max_vectors(1));
    default: return;
  }
}

int64_t panels_of(int64_t N) { return (N + kPanel - 1) / kPanel; }

// Floats of panel p's row (its width rounded up to whole registers).
int64_t panel_width(int64_t N, int64_t p) {
  const int64_t cols = std::min(kPanel, N - p * kPanel);
  return (cols + kW - 1) / kW * kW;
}

}  // namespace

template <>
int64_t step_panel_columns<float>() {
  return kPanel;
}
template <>
int64_t step_panel_columns<double>() {
  return kPanel;
}

template <typename T>
int64_t step_packed_size(int64_t N, int64_t K) {
  int64_t floats = 0;
  for (int64_t p = 0; p < panels_of(N); ++p) floats += panel_width(N, p) * K;
  return floats;
}

template <typename T>
void step_pack(bool trans_w, int64_t N, int64_t K, const T* W, T* packed) {
  for (int64_t p = 0; p < panels_of(N); ++p) {
    const int64_t P = panel_width(N, p), j0 = p * kPanel, cols = std::min(kPanel, N - j0);
    T* panel = packed + j0 * K;  // every panel before p is full
    for (int64_t k = 0; k < K; ++k) {
      T* row = panel + k * P;
      for (int64_t j = 0; j < cols; ++j) row[j] = trans_w ? W[(j0 + j) * K + k] : W[k * N + j0 + j];
      std::fill(row + cols, row + P, T(0));
    }
  }
}

template <typename T>
void step_packed_rows(const T* packed, int64_t N, int64_t K, const int32_t* rows, int64_t n, T* out) {
  for (int64_t i = 0; i < n; ++i) RFA_ASSERT(rows[i] >= 0 && rows[i] < N, "row {} of {}", rows[i], N);  // not in a fork
  auto one = [&](int64_t i) {
    const int64_t r = rows[i];
    const int64_t p = r / kPanel, P = panel_width(N, p);
    const T* column = packed + p * kPanel * K + (r - p * kPanel);  // every panel before p is full
    T* dst = out + i * K;
    for (int64_t k = 0; k < K; ++k) dst[k] = column[k * P];
  };
  if (n * K < parallel_min_work()) {  // a decode step's few rows: no fork
    for (int64_t i = 0; i < n; ++i) one(i);
  } else {
    parallel_for(n, one);
  }
}

namespace {

// step_gemm_group's tasks, on the pool (share: null) or, inside a team's region, share->t's part of
// them (the tasks planned for share->nt threads, as the pool would split them).
void float_group(int64_t M, int64_t N, int64_t K, const float* x, std::span<const StepProduct<float>> products,
                 bool accumulate, GemmThreads threads, WeightsFrom from, const StepShare* share) {
  const int64_t G = static_cast<int64_t>(products.size());
  if (M <= 0 || N <= 0 || G == 0) return;
  const int threads_n = share ? share->nt : thread_count();  // the threads the tasks are planned for
  // Below parallel_min_work() multiply-adds (a 384 x 384 projection of one row, at the reference
  // fork) waking the pool costs about what it saves; the group's products count together (q, k and
  // v of one row: 3x).
  const bool fork = share || (threads != GemmThreads::one && G * M * N * K >= parallel_min_work());
  // Tasks are (panel part, block of rows) pairs over every product's panels, as many as give
  // every thread two, of equal size so that no thread waits on another (3 panels of 36 and 28
  // rows had one thread do 56% of a 64-row product). Columns are split before rows: a panel part
  // is read from memory by the one thread that owns it, while every block of rows reads the whole
  // panel again (two blocks read a decode step's 43 MB of weights twice). So the panels' registers
  // split in halves (each still 8 chains from 2 rows; one row keeps its 8 registers: latency-bound
  // on 4) where whole panels do not give an even share, and rows only where halves do not either
  // (more threads than half panels), from 4 tiles (below that the product is bound by reading W: at
  // 8 rows two blocks were 1.2x slower).
  const int64_t panels_each = panels_of(N), panels = G * panels_each;
  const int64_t wanted = fork ? 2 * threads_n : 1;
  auto even = [&](int64_t n) { return n >= wanted && n % threads_n == 0; };
  const int64_t parts = fork && M >= 2 && !even(panels) && (even(2 * panels) || panels < wanted) ? 2 : 1;
  int64_t blocks = 1;
  if (fork && M >= 4 * kRowsPerTile && !even(panels * parts)) {
    blocks = (wanted + panels * parts - 1) / (panels * parts);
    if (panels * parts * blocks % threads_n != 0) ++blocks;  // 9 panels: 18 tasks, not 9 (5 against 4)
    blocks = std::min<int64_t>(blocks, M / kRowsPerTile);
  }
  const int64_t part_vectors = kPanelVectors / parts;
  const int64_t tasks = panels * parts * blocks;
  // The next panel into L2 while a task's tiles run (kPrefetchNextPanel): a thread's tasks are
  // consecutive (parallel_for's static schedule), so task t + 1's panel is most often its own next.
  const bool prefetch_next = kPrefetchNextPanel && from == WeightsFrom::memory && M >= kNextPanelRowsMin &&
                             M <= kNextPanelRowsMax;
  auto task = [&](int64_t t) {
    const int64_t b = t / (panels * parts), pg = t % (panels * parts) / parts, part = t % parts;
    const StepProduct<float>& product = products[static_cast<size_t>(pg / panels_each)];
    const int64_t p = pg % panels_each;
    const int64_t j0 = p * kPanel, P = panel_width(N, p), vectors = P / kW;
    const int64_t v0 = std::min(vectors, part * part_vectors), v1 = std::min(vectors, v0 + part_vectors);
    const float* next = nullptr;
    int64_t next_floats = 0;
    if (prefetch_next && t + 1 < tasks && (t + 1) % parts == 0) {  // the next task starts a panel
      const int64_t pg_next = (t + 1) % (panels * parts) / parts, p_next = pg_next % panels_each;
      next_floats = panel_width(N, p_next) * K;
      if (next_floats * int64_t(sizeof(float)) <= kNextPanelBytesMax)
        next = products[static_cast<size_t>(pg_next / panels_each)].packed + p_next * kPanel * K;
    }
    // Block b holds rows [M b / blocks, M (b + 1) / blocks): sizes differ by at most one row.
    const int64_t m0 = M * b / blocks, m1 = M * (b + 1) / blocks, width = std::min(kPanel, N - j0);
    if constexpr (kPrefetchNextPanel)
      if (next) return panel_rows<true>(m0, m1, v0, v1, N, K, x, product.packed + j0 * K, P, j0, width, product.out,
                                        accumulate, next, next_floats);
    panel_rows<false>(m0, m1, v0, v1, N, K, x, product.packed + j0 * K, P, j0, width, product.out, accumulate,
                      nullptr, 0);
  };
  if (share) {
    for (int64_t t = partition_begin(tasks, share->t, share->nt); t < partition_begin(tasks, share->t + 1, share->nt); ++t)
      task(t);
  } else if (!fork || tasks < 2) {
    for (int64_t t = 0; t < tasks; ++t) task(t);
  } else {
    parallel_for(tasks, task);
  }
}

}  // namespace

template <>
void step_gemm_group<float>(int64_t M, int64_t N, int64_t K, const float* x,
                            std::span<const StepProduct<float>> products, bool accumulate, GemmThreads threads,
                            WeightsFrom from) {
  float_group(M, N, K, x, products, accumulate, threads, from, nullptr);
}

template <>
void step_gemm_group_share<float>(int64_t M, int64_t N, int64_t K, const float* x,
                                  std::span<const StepProduct<float>> products, bool accumulate, WeightsFrom from,
                                  StepShare share) {
  float_group(M, N, K, x, products, accumulate, GemmThreads::pool, from, &share);
}

// The same chain in scalar code, one element at a time.
template <>
void step_gemm_group<double>(int64_t M, int64_t N, int64_t K, const double* x,
                             std::span<const StepProduct<double>> products, bool accumulate, GemmThreads,
                             WeightsFrom) {
  for (const StepProduct<double>& product : products)
    for (int64_t p = 0; p < panels_of(N); ++p) {
      const int64_t P = panel_width(N, p), j0 = p * kPanel, cols = std::min(kPanel, N - j0);
      const double* panel = product.packed + j0 * K;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t j = 0; j < cols; ++j) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k) s += x[m * K + k] * panel[k * P + j];
          double& o = product.out[m * N + j0 + j];
          o = accumulate ? o + s : s;
        }
    }
}

// The scalar reference path (the tests'): thread 0 computes the whole group, the others nothing.
template <>
void step_gemm_group_share<double>(int64_t M, int64_t N, int64_t K, const double* x,
                                   std::span<const StepProduct<double>> products, bool accumulate, WeightsFrom from,
                                   StepShare share) {
  if (share.t == 0) step_gemm_group<double>(M, N, K, x, products, accumulate, GemmThreads::one, from);
}

template <typename T>
void step_gemm(int64_t M, int64_t N, int64_t K, const T* x, const T* packed, T* out, bool accumulate,
               GemmThreads threads, WeightsFrom from) {
  const StepProduct<T> one{packed, out};
  step_gemm_group<T>(M, N, K, x, std::span<const StepProduct<T>>(&one, 1), accumulate, threads, from);
}

template void step_packed_rows<float>(const float*, int64_t, int64_t, const int32_t*, int64_t, float*);
template void step_packed_rows<double>(const double*, int64_t, int64_t, const int32_t*, int64_t, double*);
template int64_t step_packed_size<float>(int64_t, int64_t);
template int64_t step_packed_size<double>(int64_t, int64_t);
template void step_pack<float>(bool, int64_t, int64_t, const float*, float*);
template void step_pack<double>(bool, int64_t, int64_t, const double*, double*);
template void step_gemm<float>(int64_t, int64_t, int64_t, const float*, const float*, float*, bool, GemmThreads,
                               WeightsFrom);
template void step_gemm<double>(int64_t, int64_t, int64_t, const double*, const double*, double*, bool,
                                GemmThreads, WeightsFrom);

}  // namespace rfa
