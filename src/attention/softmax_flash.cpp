#include "attention/softmax_flash.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "attention/attention_tasks.h"
#include "attention/causal_matmul.h"
#include "attention/tile_matmul.h"
#include "kernels/simd_exp.h"
#include "kernels/transpose.h"
#include "kernels/vector_math.h"
#include "core/error.h"
#include "core/segment_starts.h"

namespace rfa {
namespace {

constexpr int kBlock = kFlashBlock;
constexpr size_t kTileLd = (kBlock + 15) / 16 * 16;  // leading dimension of a (block, block) tile

// Per-thread scratch in elements. Forward: queries and values transposed in panels
// (2 x (Dh, TB)), the score tile, the output accumulator transposed (Dh, kTileLd),
// per query max, sum and rescale factor (3 x kTileLd). Backward: keys, queries, dout
// and dq transposed in panels (4 x (Dh, TB)), queries and dout padded (2 x (T, DP)),
// D_i and lse_i (2 x TB: zero past T, read a register at a time), two tiles, dk and
// dv accumulators.
struct FlashSizes {
  size_t T, TB, DP, tile;
  explicit FlashSizes(const AttentionDims& d)
      : T(d.T), TB((d.T + kBlock - 1) / kBlock * kTileLd), DP(pad16(d.Dh)), tile(kBlock * kTileLd) {}
  size_t forward(const AttentionDims& d) const { return 2 * d.Dh * TB + tile + d.Dh * kTileLd + 3 * kTileLd; }
  size_t backward(const AttentionDims& d) const {
    return 4 * d.Dh * TB + 2 * T * DP + 2 * TB + 2 * tile + 2 * kBlock * DP;
  }
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

// A row of queries [0, nr) (whole registers of W) of which [r0, r1) are live: registers [0, v0)
// hold none, [u0, u1) only live ones, the others (the one holding r0, those from r1's) some.
template <typename T>
struct LiveSpans {
  using V = typename Simd<T>::V;
  static constexpr int W = Simd<T>::W;
  int r0, r1, v0, u0, u1;
  LiveSpans(int r0_, int r1_, int nr) : r0(r0_), r1(r1_), v0(r0_ / W * W), u0(std::min(nr, (r0_ + W - 1) / W * W)),
                                         u1(std::max(u0, r1_ / W * W)) {}
  auto live(const V& rows) const { return (rows >= T(r0)) & (rows < T(r1)); }
  // row[r] = f(r) at the live queries, 0 at the others; f gives the register at r, lanes the
  // offsets 0 .. W-1.
  template <typename F>
  void fill(T* row, int nr, const V& lanes, F f) const {
    const V zero = V{};
    for (int r = 0; r < v0; r += W) simd_store(row + r, zero);
    for (int r = v0; r < u0; r += W) simd_store(row + r, live(lanes + T(r)) ? f(r) : zero);
    for (int r = u0; r < u1; r += W) simd_store(row + r, f(r));
    for (int r = u1; r < nr; r += W) simd_store(row + r, live(lanes + T(r)) ? f(r) : zero);
  }
};

// accᵀ (rows, kTileLd): each row's first nr columns times factor's (nr a multiple of the width).
template <typename T>
void scale_columns(T* acct, const T* factor, int rows, int nr) {
  for (int e = 0; e < rows; ++e)
    for (int r = 0; r < nr; r += Simd<T>::W)
      simd_store(acct + e * kTileLd + r, simd_load(acct + e * kTileLd + r) * simd_load(factor + r));
}

// The saved diagonal blocks' pᵀ after the B H T log-sum-exps: (B H, blocks, kBlock, kTileLd).
size_t diagonal_blocks(const AttentionDims& d) { return static_cast<size_t>((d.T + kBlock - 1) / kBlock); }
template <typename T>
T* saved_diagonal(T* saved, const AttentionDims& d, int64_t task, int i0) {
  return saved + static_cast<size_t>(d.B) * d.H * d.T +
         (static_cast<size_t>(task) * diagonal_blocks(d) + static_cast<size_t>(i0 / kBlock)) * kBlock * kTileLd;
}
}  // namespace

size_t softmax_flash_saved_size(const AttentionDims& d) {
  return static_cast<size_t>(d.B) * d.H * (static_cast<size_t>(d.T) + diagonal_blocks(d) * kBlock * kTileLd);
}

size_t softmax_flash_workspace_size(const AttentionDims& d, int threads) {
  return static_cast<size_t>(threads) * FlashSizes(d).per_thread(d);
}

template <typename T>
void softmax_flash_forward(T* out, T* saved, Workspace<T> workspace, const T* q, const T* k, const T* v,
                           const AttentionDims& d, const uint8_t* starts, int window) {
  T* lse = saved;
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C();
  const FlashSizes z(d);
  const int threads = thread_count();
  check_workspace(workspace.size, d, threads);
  const T scale = T(1) / std::sqrt(T(Dh));
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  V lane;  // 0, 1, ..., W - 1: a register's query offsets
  for (int l = 0; l < W; ++l) lane[l] = T(l);
  attention_tasks_run(int64_t(d.B) * H, workspace.data, z.per_thread(d), threads, [&](int64_t task, T* scratch) {
    const int b = static_cast<int>(task / H), h = static_cast<int>(task % H);
    const size_t head = static_cast<size_t>(b) * Tn * C + static_cast<size_t>(h) * Dh;
    T* qt = scratch;                  // (Dh, TB) queries transposed, in panels
    T* vt = qt + Dh * z.TB;           // (Dh, TB) values transposed, in panels
    T* pt = vt + Dh * z.TB;           // (block, kTileLd) scores transposed (keys by queries), then p
    T* acct = pt + z.tile;            // (Dh, kTileLd) unnormalised output transposed
    T* row_max = acct + Dh * kTileLd; // (kTileLd) per query: the running max
    T* row_sum = row_max + kTileLd;   // (kTileLd) per query: the running sum under it
    T* corr = row_sum + kTileLd;      // (kTileLd) per query: old max -> new max factor of this key block
    pack_panels(qt, q + head, Tn, C, Dh);
    pack_panels(vt, v + head, Tn, C, Dh);
    T* lse_bh = lse + static_cast<size_t>(task) * Tn;
    const uint8_t* st = starts ? starts + static_cast<size_t>(b) * Tn : nullptr;  // (T) or null
    const bool banded = st || window > 0;  // keys below a query's first one are masked
    int first[kBlock];    // banded: each query row's first key, max(its document's first token, i - window + 1)
    int key_end[kBlock];  // per key row of a block: its queries are [diagonal ? c : 0, key_end[c])
    for (int i0 = 0; i0 < Tn; i0 += kBlock) {
      const int bq = std::min(kBlock, Tn - i0);
      const int nr = (bq + W - 1) / W * W;  // the registers of queries
      std::fill(row_max, row_max + kTileLd, kNegInf);
      std::fill(row_sum, row_sum + kTileLd, T(0));
      int j_begin = 0;  // the first key block any query row of this block reads
      if (banded) {  // first[] ascends with r, so first[0] bounds the block's keys
        int f = st ? std::max(segment_first(st, i0), 0) : 0;  // the document's first token
        for (int r = 0; r < bq; ++r) {
          if (st && st[i0 + r]) f = i0 + r;
          first[r] = window > 0 ? std::max(f, i0 + r - window + 1) : f;
        }
        j_begin = first[0] / kBlock * kBlock;  // key blocks wholly before it are skipped: O(T * window)
      }
      // Key blocks up to the diagonal block (blocks are aligned: j0 <= i0). Transposed, each
      // query's running max and sum are a lane of a register: no reduction across lanes.
      for (int j0 = j_begin; j0 <= i0; j0 += kBlock) {
        const int bk = std::min(kBlock, Tn - j0);
        const bool diagonal = j0 == i0;
        // sᵀ = scale k_j q_iᵀ  (bk, bq); on the diagonal key c is read by queries r >= c only
        // (causal_matmul.h: columns from each row tile's first row, rounded down to a register)
        (diagonal ? matmul_upper_c<T> : tile_matmul<T>)(pt, kTileLd, k + head + static_cast<size_t>(j0) * C, C,
                                                        panel_at(qt, i0, Dh), kTileLd, bk, Dh, bq, scale, false);
        // Key c's live queries: [r0, key_end[c]) with r0 = c on the diagonal (else 0) and the end
        // the queries whose first key is at or before it (first[] ascends: a prefix), or bq.
        for (int c = 0, e = 0; c < bk; ++c) {
          if (banded)
            while (e < bq && first[e] <= j0 + c) ++e;
          key_end[c] = banded ? e : bq;
        }
        for (int r = 0; r < nr; r += W) {
          const V rows = lane + T(r);
          // On the diagonal keys past this register's last query are masked in all its lanes:
          // read up to it; the product below reads keys up to its two-register column block's
          // end, so those rows of p are zeroed.
          const int c_end = diagonal ? std::min(bk, r + W) : bk;
          const int c_zero = diagonal ? std::min(bk, (r / (2 * W) + 1) * 2 * W) : bk;
          // Keys [0, c_all) are live in every lane (unbanded, the register within bq: the keys before
          // its first query on the diagonal, all of them off it); the rest are masked lane by lane.
          const int c_all = banded || r + W > bq ? 0 : diagonal ? std::min(r, c_end) : c_end;
          const auto live = [&](int c) { return (rows >= T(diagonal ? c : 0)) & (rows < T(key_end[c])); };
          const V old_max = simd_load(row_max + r);
          // Off the masks, two chains (even and odd keys) for the max and the sum: one chain of 64
          // dependent adds per register held the forward at T 4096 back 2-3% (x86-64-v3 and native).
          V mx = old_max, mx_odd = old_max;
          int c = 0;
          for (; c + 1 < c_all; c += 2) {
            const V s0 = simd_load(pt + c * kTileLd + r), s1 = simd_load(pt + (c + 1) * kTileLd + r);
            mx = s0 > mx ? s0 : mx;
            mx_odd = s1 > mx_odd ? s1 : mx_odd;
          }
          mx = mx_odd > mx ? mx_odd : mx;
          for (; c < c_all; ++c) {
            const V s = simd_load(pt + c * kTileLd + r);
            mx = s > mx ? s : mx;
          }
          for (c = c_all; c < c_end; ++c) {
            const V s = simd_load(pt + c * kTileLd + r);
            const V sm = live(c) ? s : V{} + kNegInf;
            mx = sm > mx ? sm : mx;
          }
          // Rescale what was summed under the old max (nothing yet: 0; unchanged: exactly 1).
          const V gone = V{} + T(0), one = V{} + T(1);
          const V factor = old_max == kNegInf ? gone : (mx > old_max ? simd_exp<T>(old_max - mx) : one);
          const V m = mx == kNegInf ? gone : mx;  // a query with no key yet: its p are all 0
          V sum = simd_load(row_sum + r) * factor, sum_odd = V{};
          for (c = 0; c + 1 < c_all; c += 2) {
            T* sr = pt + c * kTileLd + r;
            const V p0 = simd_exp<T>(simd_load(sr) - m), p1 = simd_exp<T>(simd_load(sr + kTileLd) - m);
            simd_store(sr, p0);
            simd_store(sr + kTileLd, p1);
            sum += p0;
            sum_odd += p1;
          }
          for (; c < c_all; ++c) {
            T* sr = pt + c * kTileLd + r;
            const V p = simd_exp<T>(simd_load(sr) - m);
            simd_store(sr, p);
            (c & 1 ? sum_odd : sum) += p;
          }
          for (c = c_all; c < c_end; ++c) {
            T* sr = pt + c * kTileLd + r;
            const V p = live(c) ? simd_exp<T>(simd_load(sr) - m) : gone;
            simd_store(sr, p);
            (c & 1 ? sum_odd : sum) += p;  // the same chains as unmasked: banded or not, the same bits
          }
          sum += sum_odd;
          for (c = c_end; c < c_zero; ++c) simd_store(pt + c * kTileLd + r, gone);
          simd_store(row_max + r, mx);
          simd_store(row_sum + r, sum);
          simd_store(corr + r, factor);
        }
        // accᵀ = accᵀ corr + v_jᵀ pᵀ  (Dh, bq); pᵀ is 0 left of its diagonal on the diagonal block
        const bool accumulate = j0 != j_begin;
        if (accumulate) scale_columns(acct, corr, Dh, nr);
        (diagonal ? matmul_upper_b<T> : tile_matmul<T>)(acct, kTileLd, panel_at(vt, j0, Dh), kTileLd, pt, kTileLd, Dh,
                                                        bk, bq, T(1), accumulate);
      }
      // out = acc / sum, lse = max + log sum; accᵀ scaled in its columns, then transposed into out's rows
      for (int r = 0; r < nr; r += W) simd_store(corr + r, T(1) / simd_load(row_sum + r));
      scale_columns(acct, corr, Dh, nr);
      // The diagonal block's pᵀ (its key block was the last, so under the final max) divided by the
      // sums: the backward's p there without recomputing sᵀ and its exp. Key c's row is 0 before
      // query c; the register holding c was masked there, the ones before are zeroed.
      T* p_saved = saved_diagonal(saved, d, task, i0);
      for (int c = 0; c < bq; ++c) {
        const int v0 = c / W * W;
        std::fill(p_saved + c * kTileLd, p_saved + c * kTileLd + v0, T(0));
        for (int r = v0; r < nr; r += W)
          simd_store(p_saved + c * kTileLd + r, simd_load(pt + c * kTileLd + r) * simd_load(corr + r));
      }
      transpose(out + head + static_cast<size_t>(i0) * C, size_t(C), acct, kTileLd, Dh, bq);
      for (int r = 0; r < bq; ++r) lse_bh[i0 + r] = row_max[r] + std::log(row_sum[r]);
    }
  });
}

template <typename T>
void softmax_flash_backward(T* dq, T* dk, T* dv, Workspace<T> workspace, const T* dout, const T* out,
                            const T* saved, const T* q, const T* k, const T* v, const AttentionDims& d,
                            const uint8_t* starts, int window) {
  const T* lse = saved;
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  const int Tn = d.T, H = d.H, Dh = d.Dh, C = d.C();
  const FlashSizes z(d);
  const int threads = thread_count();
  check_workspace(workspace.size, d, threads);
  const T scale = T(1) / std::sqrt(T(Dh));
  V lane;  // 0, 1, ..., W - 1: a register's query offsets
  for (int l = 0; l < W; ++l) lane[l] = T(l);
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
    T* delta = dop + z.T * z.DP; // (TB)     D_i = dout_i · out_i, 0 past T
    T* lse_i = delta + z.TB;     // (TB)     the forward's lse_i, 0 past T
    T* pt = lse_i + z.TB;        // (block, kTileLd) p transposed: keys by queries
    T* dst = pt + z.tile;        // (block, kTileLd) dp, then ds, transposed
    T* dk_acc = dst + z.tile;    // (block, DP)
    T* dv_acc = dk_acc + kBlock * z.DP;  // (block, DP)
    pack_panels(kt, k + head, Tn, C, Dh);
    if (Tn > kBlock) pack_panels(qt, q + head, Tn, C, Dh);  // for sᵀ off the diagonal only
    pack_panels(dot_, dout + head, Tn, C, Dh);
    // q's and dout's rows are the products' B operands, copied into rows padded to DP: in place
    // (when a head is whole registers) the backward at nano was 2-4% faster, but at T 2048, Dh 64
    // (rows 1 KiB apart) 7% slower on AVX-512: 64 rows at that stride share too few of L1's sets.
    pack_rows(qp, z.DP, q + head, Tn, C, Dh);
    pack_rows(dop, z.DP, dout + head, Tn, C, Dh);
    std::fill(dqt, dqt + plane, T(0));
    for (int i = 0; i < Tn; ++i) {
      const size_t row = head + static_cast<size_t>(i) * C;
      delta[i] = dot(dout + row, out + row, Dh);
    }
    std::copy_n(lse + static_cast<size_t>(task) * Tn, Tn, lse_i);
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
        const int nr = (bq + W - 1) / W * W;  // the registers of queries
        // In the diagonal block (i0 == j0) key c reads queries r >= c only: pᵀ and dsᵀ are 0 left of
        // their diagonal, so their products run over the bands (causal_matmul.h: the columns from
        // each row tile's first row, the queries from its first key, the keys up to each column
        // block's last query), 0 filled below.
        const bool diagonal = i0 == j0;
        // Key c is read by queries [r0, r1): causal (r0 = c on the diagonal) and, banded, before its
        // end; its row of pᵀ (and of dsᵀ below) is 0 elsewhere, in registers (LiveSpans): the
        // registers before r0's are zeroed, those inside [r0, r1) computed whole, the rest masked.
        const auto key_range = [&](int c, int& r0, int& r1) {
          r0 = diagonal ? std::min(c, bq) : 0;
          r1 = banded ? std::clamp(next[c] - i0, r0, bq) : bq;
        };
        // pᵀ (bk, bq): the diagonal block's as the forward saved it; off it recomputed,
        // sᵀ = scale k_j q_iᵀ, p_ij = exp(s_ij - lse_i) at the live queries, else 0
        const T* p_tile = diagonal ? saved_diagonal(saved, d, task, i0) : pt;
        if (!diagonal) tile_matmul<T>(pt, kTileLd, k + head + static_cast<size_t>(j0) * C, C, panel_at(qt, i0, Dh),
                                      kTileLd, bk, Dh, bq, scale, false);
        for (int c = 0; c < bk && !diagonal; ++c) {
          T* pr = pt + c * kTileLd;
          int r0, r1;
          key_range(c, r0, r1);
          LiveSpans<T>(r0, r1, nr).fill(pr, nr, lane, [&](int r) {
            return simd_exp<T>(simd_load(pr + r) - simd_load(lse_i + i0 + r));
          });
        }
        // out_i = sum_j p_ij v_j:  dv_j += sum_i p_ij dout_i
        (diagonal ? matmul_upper_a<T> : tile_matmul<T>)(dv_acc, z.DP, p_tile, kTileLd,
                                                        dop + static_cast<size_t>(i0) * z.DP, z.DP, bk, bq, Dh, T(1),
                                                        true);
        // dp_ij = dout_i · v_j  (as dpᵀ = v_j doutᵀ, (bk, bq))
        (diagonal ? matmul_upper_c<T> : tile_matmul<T>)(dst, kTileLd, v + head + static_cast<size_t>(j0) * C, C,
                                                        panel_at(dot_, i0, Dh), kTileLd, bk, Dh, bq, T(1), false);
        // p = softmax(s):  ds_ij = p_ij (dp_ij - D_i),  D_i = sum_j p_ij dp_ij = dout_i · out_i
        for (int c = 0; c < bk; ++c) {
          T* sr = dst + c * kTileLd;
          const T* pr = p_tile + c * kTileLd;
          int r0, r1;
          key_range(c, r0, r1);
          // (0 where p is 0; dp was not computed there)
          LiveSpans<T>(r0, r1, nr).fill(sr, nr, lane, [&](int r) {
            return simd_load(pr + r) * (simd_load(sr + r) - simd_load(delta + i0 + r));
          });
        }
        // s_ij = scale q_i·k_j:  dk_j += sum_i ds_ij q_i,  dqᵀ_i += sum_j k_jᵀ ds_ij  (scale applied at the end)
        (diagonal ? matmul_upper_a<T> : tile_matmul<T>)(dk_acc, z.DP, dst, kTileLd, qp + static_cast<size_t>(i0) * z.DP,
                                                        z.DP, bk, bq, Dh, T(1), true);
        (diagonal ? matmul_upper_b<T> : tile_matmul<T>)(panel_at(dqt, i0, Dh), kTileLd, panel_at(kt, j0, Dh), kTileLd,
                                                        dst, kTileLd, Dh, bk, bq, T(1), true);
      }
      for (int c = 0; c < bk; ++c) {
        const size_t row = head + static_cast<size_t>(j0 + c) * C;
        int e = 0;
        for (; e + W <= Dh; e += W) {
          simd_store(dk + row + e, scale * simd_load(dk_acc + c * z.DP + e));
          const V dv_e = simd_load(dv_acc + c * z.DP + e);  // (a V, not the load's unaligned U: bound to
          simd_store(dv + row + e, dv_e);                    // simd_store's V& directly, GCC loaded it aligned)
        }
        for (; e < Dh; ++e) {
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
