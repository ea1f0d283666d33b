#include "attention/softmax_flash.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attention/attention_tasks.h"
#include "attention/causal_matmul.h"
#include "attention/tile_matmul.h"
#include "kernels/transpose.h"
#include "kernels/vector_math.h"
#include "core/error.h"
#include "core/segment_starts.h"

namespace rfa {
namespace {

constexpr int kBlock = kFlashBlock;
constexpr size_t kTileLd = (kBlock + 15) / 16 * 16;  // leading dimension of a (block, block) tile

// Per-thread scratch in elements. Forward: keys transposed in panels (Dh, TB),
// values (T, DP), the score tile, the output accumulator (block, DP), row max
// and sum. Backward: keys, queries, dout and dq transposed in panels (4 x (Dh,
// TB)), queries and dout padded (2 x (T, DP)), D_i (T), two tiles, dk and dv
// accumulators.
struct FlashSizes {
  size_t T, TB, DP, tile;
  explicit FlashSizes(const AttentionDims& d)
      : T(d.T), TB((d.T + kBlock - 1) / kBlock * kTileLd), DP(pad16(d.Dh)), tile(kBlock * kTileLd) {}
  size_t forward(const AttentionDims& d) const { return d.Dh * TB + T * DP + tile + kBlock * DP + 2 * kBlock; }
  size_t backward(const AttentionDims& d) const { return 4 * d.Dh * TB + 2 * T * DP + T + 2 * tile + 2 * kBlock * DP; }
  size_t per_thread(const AttentionDims& d) const { return std::max(forward(d), backward(d)); }
};

void check_workspace(size_t size, const AttentionDims& d, int threads) {
  RFA_ASSERT(size >= softmax_flash_workspace_size(d, threads), "flash softmax workspace {} < {} for {} threads",
             size, softmax_flash_workspace_size(d, threads), threads);
}

// Head of x (T, C) for one batch row (x already offset to the head), transposed
// in panels: block jb of kBlock rows becomes the (Dh, kTileLd) panel at
// xt + jb * Dh * kTileLd. One (Dh, T) matrix would put a row of it every 4T bytes,
// and a tile product reading 64 such rows at a power-of-two stride thrashes L1's sets.
// Each panel one transpose in 8 x 8 register blocks (kernels/transpose.h) rather than a scalar load
// and strided store per element (the backward packs three panels and unpacks dq's).
template <typename T>
void pack_panels(T* xt, const T* x, int T_, int C, int Dh) {
  for (int t0 = 0; t0 < T_; t0 += kBlock)
    transpose(xt + static_cast<size_t>(t0 / kBlock) * Dh * kTileLd, kTileLd, x + static_cast<size_t>(t0) * C,
              size_t(C), std::min(kBlock, T_ - t0), Dh);
}
// The panel holding rows [t0, t0 + kBlock) (t0 a multiple of kBlock).
template <typename T>
T* panel_at(T* xt, int t0, int Dh) {
  return xt + static_cast<size_t>(t0 / kBlock) * Dh * kTileLd;
}

// xp (T, ld) = head of x (T, C), rows padded to ld.
template <typename T>
void pack_rows(T* xp, size_t ld, const T* x, int T_, int C, int Dh) {
  for (int t = 0; t < T_; ++t) std::copy_n(x + static_cast<size_t>(t) * C, Dh, xp + t * ld);
}

// Max and sum of one tile row (kTileLd entries), with register accumulators:
// the plain loops are reductions the compiler keeps scalar without -ffast-math,
// and they ran the forward at half the speed of its products.
template <typename T>
T tile_row_max(const T* x) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  V m = simd_load(x);
  for (size_t c = W; c < kTileLd; c += W) {
    const V y = simd_load(x + c);
    m = y > m ? y : m;
  }
  return simd_max<T>(m);
}
template <typename T>
T tile_row_sum(const T* x) {
  typename Simd<T>::V acc = {};
  for (size_t c = 0; c < kTileLd; c += Simd<T>::W) acc += simd_load(x + c);
  return simd_sum<T>(acc);
}

}  // namespace

size_t softmax_flash_saved_size(const AttentionDims& d) { return static_cast<size_t>(d.B) * d.H * d.T; }

size_t softmax_flash_workspace_size(const AttentionDims& d, int threads) {
  return static_cast<size_t>(threads) * FlashSizes(d).per_thread(d);
}

template <typename T>
void softmax_flash_forward(T* out, T* lse, Workspace<T> workspace, const T* q, const T* k, const T* v,
                           const AttentionDims& d, const uint8_t* starts, int window) {
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C();
  const FlashSizes z(d);
  const int threads = thread_count();
  check_workspace(workspace.size, d, threads);
  const T scale = T(1) / std::sqrt(T(Dh));
  attention_tasks_run(int64_t(d.B) * H, workspace.data, z.per_thread(d), threads, [&](int64_t task, T* scratch) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    const size_t head = static_cast<size_t>(b) * Tn * C + static_cast<size_t>(h) * Dh;
    T* kt = scratch;              // (Dh, TB) keys transposed, in panels
    T* vp = kt + Dh * z.TB;       // (T, DP)  values
    T* s = vp + z.T * z.DP;       // (block, kTileLd) scores, then probabilities
    T* acc = s + z.tile;          // (block, DP) unnormalised output
    T* row_max = acc + kBlock * z.DP;  // (block)
    T* row_sum = row_max + kBlock;     // (block)
    pack_panels(kt, k + head, Tn, C, Dh);
    pack_rows(vp, z.DP, v + head, Tn, C, Dh);
    T* lse_bh = lse + static_cast<size_t>(task) * Tn;
    const uint8_t* st = starts ? starts + static_cast<size_t>(b) * Tn : nullptr;  // (T) or null
    const bool banded = st || window > 0;  // keys below a row's first one are masked
    int first[kBlock];  // banded: each query row's first key, max(its document's first token, i - window + 1)
    for (int i0 = 0; i0 < Tn; i0 += kBlock) {
      const int bq = std::min(kBlock, Tn - i0);
      std::fill(acc, acc + bq * z.DP, T(0));
      std::fill(row_max, row_max + bq, -std::numeric_limits<T>::infinity());
      std::fill(row_sum, row_sum + bq, T(0));
      int j_begin = 0;  // the first key block any query row of this block reads
      if (banded) {  // first[] ascends with r, so first[0] bounds the block's keys
        int f = st ? std::max(segment_first(st, i0), 0) : 0;  // the document's first token
        for (int r = 0; r < bq; ++r) {
          if (st && st[i0 + r]) f = i0 + r;
          first[r] = window > 0 ? std::max(f, i0 + r - window + 1) : f;
        }
        j_begin = first[0] / kBlock * kBlock;  // key blocks wholly before it are skipped: O(T * window)
      }
      // Key blocks up to the diagonal block (blocks are aligned: j0 <= i0).
      for (int j0 = j_begin; j0 <= i0; j0 += kBlock) {
        const int bk = std::min(kBlock, Tn - j0);
        // s = scale q_i k_jᵀ  (bq, bk); the diagonal block's keys j <= i only (causal_matmul.h: each
        // row tile's columns up to its last row; the rest of a row is set to -inf below)
        const bool diagonal = j0 == i0;
        if (diagonal)
          matmul_lower_c(s, kTileLd, q + head + static_cast<size_t>(i0) * C, C, panel_at(kt, j0, Dh), kTileLd, bq, Dh,
                         bk, scale, false);
        else
          tile_matmul(s, kTileLd, q + head + static_cast<size_t>(i0) * C, C, panel_at(kt, j0, Dh), kTileLd, bq, Dh,
                      bk, scale, false);
        for (int r = 0; r < bq; ++r) {
          T* sr = s + r * kTileLd;
          const int live = std::min(bk, i0 + r - j0 + 1);  // keys j <= i; >= 1 since j0 <= i0
          std::fill(sr + live, sr + kTileLd, -std::numeric_limits<T>::infinity());
          if (banded) {  // and keys j >= first(i): none in this block leaves the row as it was
            const int lo = std::clamp(first[r] - j0, 0, live);
            if (lo == live) {
              std::fill(sr, sr + kTileLd, T(0));
              continue;
            }
            std::fill(sr, sr + lo, -std::numeric_limits<T>::infinity());
          }
          const T mx = tile_row_max(sr);
          // Running softmax: rescale what was summed under the old max (nothing yet: 0).
          if (mx > row_max[r]) {
            const T corr = row_max[r] == -std::numeric_limits<T>::infinity() ? T(0) : exp_of(row_max[r] - mx);
            row_sum[r] *= corr;
            T* ar = acc + r * z.DP;
            for (int e = 0; e < Dh; ++e) ar[e] *= corr;
            row_max[r] = mx;
          }
          const T m = row_max[r];
          RFA_OMP_SIMD_FULL  // (kernels/vector_math.h: the whole register)
          for (int c = 0; c < live; ++c) sr[c] = exp_of(sr[c] - m);
          std::fill(sr + live, sr + kTileLd, T(0));  // the keys after i (exp_approx(-inf) is 1e-38, not 0)
          if (banded) std::fill(sr, sr + std::clamp(first[r] - j0, 0, live), T(0));
          row_sum[r] += tile_row_sum(sr);
        }
        // acc += p v_j  (bq, Dh); on the diagonal p is 0 right of it: each row tile reads keys up to its last row
        if (diagonal)
          matmul_lower_a(acc, z.DP, s, kTileLd, vp + static_cast<size_t>(j0) * z.DP, z.DP, bq, bk, Dh, T(1), true);
        else
          tile_matmul(acc, z.DP, s, kTileLd, vp + static_cast<size_t>(j0) * z.DP, z.DP, bq, bk, Dh, T(1), true);
      }
      for (int r = 0; r < bq; ++r) {
        const T inv = T(1) / row_sum[r];
        T* o = out + head + static_cast<size_t>(i0 + r) * C;
        for (int e = 0; e < Dh; ++e) o[e] = acc[r * z.DP + e] * inv;
        lse_bh[i0 + r] = row_max[r] + std::log(row_sum[r]);
      }
    }
  });
}

template <typename T>
void softmax_flash_backward(T* dq, T* dk, T* dv, Workspace<T> workspace, const T* dout, const T* out,
                            const T* lse, const T* q, const T* k, const T* v, const AttentionDims& d,
                            const uint8_t* starts, int window) {
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C();
  const FlashSizes z(d);
  const int threads = thread_count();
  check_workspace(workspace.size, d, threads);
  const T scale = T(1) / std::sqrt(T(Dh));
  attention_tasks_run(int64_t(d.B) * H, workspace.data, z.per_thread(d), threads, [&](int64_t task, T* scratch) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    const size_t head = static_cast<size_t>(b) * Tn * C + static_cast<size_t>(h) * Dh;
    const size_t plane = Dh * z.TB;
    T* kt = scratch;             // (Dh, TB) keys transposed, in panels
    T* qt = kt + plane;          // (Dh, TB) queries transposed, in panels
    T* dot_ = qt + plane;        // (Dh, TB) dout transposed, in panels
    T* dqt = dot_ + plane;       // (Dh, TB) dq transposed in panels, accumulated over key blocks
    T* qp = dqt + plane;         // (T, DP)  queries
    T* dop = qp + z.T * z.DP;    // (T, DP)  dout
    T* delta = dop + z.T * z.DP; // (T)      D_i = dout_i · out_i
    T* pt = delta + z.T;         // (block, kTileLd) p transposed: keys by queries
    T* dst = pt + z.tile;        // (block, kTileLd) dp, then ds, transposed
    T* dk_acc = dst + z.tile;    // (block, DP)
    T* dv_acc = dk_acc + kBlock * z.DP;  // (block, DP)
    pack_panels(kt, k + head, Tn, C, Dh);
    pack_panels(qt, q + head, Tn, C, Dh);
    pack_panels(dot_, dout + head, Tn, C, Dh);
    pack_rows(qp, z.DP, q + head, Tn, C, Dh);
    pack_rows(dop, z.DP, dout + head, Tn, C, Dh);
    std::fill(dqt, dqt + plane, T(0));
    for (int i = 0; i < Tn; ++i) {
      const size_t row = head + static_cast<size_t>(i) * C;
      delta[i] = dot(dout + row, out + row, Dh);
    }
    const T* lse_bh = lse + static_cast<size_t>(task) * Tn;
    const uint8_t* st = starts ? starts + static_cast<size_t>(b) * Tn : nullptr;  // (T) or null
    const bool banded = st || window > 0;  // queries at or past a key's end do not read it
    int next[kBlock];  // banded: key j's end, min(the next document's first token (or T), j + window)
    for (int j0 = 0; j0 < Tn; j0 += kBlock) {
      const int bk = std::min(kBlock, Tn - j0);
      std::fill(dk_acc, dk_acc + bk * z.DP, T(0));
      std::fill(dv_acc, dv_acc + bk * z.DP, T(0));
      int i_end = Tn;  // past the last query block any key of this block is read by
      if (banded) {  // next[] ascends with c, so next[bk - 1] bounds the block's queries
        int e = st ? segment_next(st, j0 + bk - 1, Tn) : Tn;  // the next document's first token
        for (int c = bk - 1; c >= 0; --c) {
          next[c] = window > 0 ? std::min(e, j0 + c + window) : e;
          if (st && st[j0 + c]) e = j0 + c;
        }
        i_end = next[bk - 1];  // query blocks wholly past it are skipped: O(T * window)
      }
      for (int i0 = j0; i0 < i_end; i0 += kBlock) {
        const int bq = std::min(kBlock, Tn - i0);
        // In the diagonal block (i0 == j0) key c reads queries r >= c only: pᵀ and dsᵀ are 0 left of
        // their diagonal, so their products run over the bands (causal_matmul.h: the columns from
        // each row tile's first row, the queries from its first key, the keys up to each column
        // block's last query), 0 filled below.
        const bool diagonal = i0 == j0;
        // sᵀ = scale k_j q_iᵀ  (bk, bq);  p_ij = exp(s_ij - lse_i) for j <= i, else 0
        (diagonal ? matmul_upper_c<T> : tile_matmul<T>)(pt, kTileLd, k + head + static_cast<size_t>(j0) * C, C,
                                                        panel_at(qt, i0, Dh), kTileLd, bk, Dh, bq, scale, false);
        for (int c = 0; c < bk; ++c) {
          T* pr = pt + c * kTileLd;
          const T* lse_i = lse_bh + i0;
          const int r0 = diagonal ? std::min(c, bq) : 0;  // query i0+r < key j0+c: 0
          std::fill(pr, pr + r0, T(0));
          RFA_OMP_SIMD_FULL
          for (int r = r0; r < bq; ++r) pr[r] = exp_of(pr[r] - lse_i[r]);
          if (banded) std::fill(pr + std::clamp(next[c] - i0, 0, bq), pr + bq, T(0));  // later documents, out of window
        }
        // out_i = sum_j p_ij v_j:  dv_j += sum_i p_ij dout_i
        (diagonal ? matmul_upper_a<T> : tile_matmul<T>)(dv_acc, z.DP, pt, kTileLd, dop + static_cast<size_t>(i0) * z.DP,
                                                        z.DP, bk, bq, Dh, T(1), true);
        // dp_ij = dout_i · v_j  (as dpᵀ = v_j doutᵀ, (bk, bq))
        (diagonal ? matmul_upper_c<T> : tile_matmul<T>)(dst, kTileLd, v + head + static_cast<size_t>(j0) * C, C,
                                                        panel_at(dot_, i0, Dh), kTileLd, bk, Dh, bq, T(1), false);
        // p = softmax(s):  ds_ij = p_ij (dp_ij - D_i),  D_i = sum_j p_ij dp_ij = dout_i · out_i
        for (int c = 0; c < bk; ++c) {
          T* sr = dst + c * kTileLd;
          const T* pr = pt + c * kTileLd;
          const T* delta_i = delta + i0;
          const int r0 = diagonal ? std::min(c, bq) : 0;
          std::fill(sr, sr + r0, T(0));  // (p is 0 there; dp was not computed)
          RFA_OMP_SIMD_FULL
          for (int r = r0; r < bq; ++r) sr[r] = pr[r] * (sr[r] - delta_i[r]);
        }
        // s_ij = scale q_i·k_j:  dk_j += sum_i ds_ij q_i,  dqᵀ_i += sum_j k_jᵀ ds_ij  (scale applied at the end)
        (diagonal ? matmul_upper_a<T> : tile_matmul<T>)(dk_acc, z.DP, dst, kTileLd, qp + static_cast<size_t>(i0) * z.DP,
                                                        z.DP, bk, bq, Dh, T(1), true);
        (diagonal ? matmul_upper_b<T> : tile_matmul<T>)(panel_at(dqt, i0, Dh), kTileLd, panel_at(kt, j0, Dh), kTileLd,
                                                        dst, kTileLd, Dh, bk, bq, T(1), true);
      }
      for (int c = 0; c < bk; ++c) {
        const size_t row = head + static_cast<size_t>(j0 + c) * C;
        for (int e = 0; e < Dh; ++e) {
          dk[row + e] = scale * dk_acc[c * z.DP + e];
          dv[row + e] = dv_acc[c * z.DP + e];
        }
      }
    }
    // dq = scale dqᵀ's panels transposed back (8 x 8 register blocks), then scaled in its rows.
    for (int i0 = 0; i0 < Tn; i0 += kBlock)
      transpose(dq + head + static_cast<size_t>(i0) * C, size_t(C), panel_at(dqt, i0, Dh), kTileLd, Dh,
                std::min(kBlock, Tn - i0));
    for (int i = 0; i < Tn; ++i) {
      T* dqi = dq + head + static_cast<size_t>(i) * C;
      RFA_OMP_SIMD_FULL  // dq's rows overlap nothing read here
      for (int e = 0; e < Dh; ++e) dqi[e] *= scale;
    }
  });
}

#define RFA_INSTANTIATE(T)                                                                                    \
  template void softmax_flash_forward<T>(T*, T*, Workspace<T>, const T*, const T*, const T*,                 \
                                         const AttentionDims&, const uint8_t*, int);                         \
  template void softmax_flash_backward<T>(T*, T*, T*, Workspace<T>, const T*, const T*, const T*, const T*,  \
                                          const T*, const T*, const AttentionDims&, const uint8_t*, int);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
