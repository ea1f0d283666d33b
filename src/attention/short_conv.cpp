#include "attention/short_conv.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/vector_math.h"

namespace rfa {
namespace {

constexpr int kChannelBlock = 32;     // the backward's unit of parallel work: channels [c0, c0 + 32) of one tensor
constexpr int kConvPrefetchRows = 8;  // how far ahead the weight gradient's row loop requests its rows

}  // namespace

int64_t short_conv_history_size(const AttentionSpec& s) {
  return s.short_conv > 0 ? 3 * int64_t(s.short_conv - 1) * s.C() : 0;
}

int64_t short_conv_ext_size(const AttentionSpec& s, int B, int T) {
  return s.short_conv > 0 ? 3 * int64_t(B) * (s.short_conv - 1 + T) * s.C() : 0;
}

// The loops run over channels innermost, contiguous in x, y and w (K, C), a vector register of
// channels at a time (kernels/vector_math.h) with its sum in a register across the taps or rows
// (summed in memory, each += was a store the next one waited on: 6 cycles a multiply-add), then
// the channels left over one by one in the same order. Each output is summed in tap order
// j = 0, 1, ..., K-1 in the forward, the backward and the step alike.
// With document starts (starts: (T) of the row, nonzero at a document's first token; null =
// none), tap j of output t reads x[t - j] only when no document starts in (t - j, t]: a
// document's first token sees nothing before it, as if its row began there.
namespace {

// Taps of output t that read its own document (or the history): all K, or back to the last start.
inline int taps_at(int t, int K, int last_start) { return last_start < 0 ? K : std::min(K, t - last_start + 1); }

// Output row t of one tensor: a register of channels at a time across the row (contiguous in x,
// ext and w; row by row, each output's K input rows are the last ones read: a register of channels
// down all the rows first had each row's lines come from L2 or further: a sixth slower at nano),
// then the tail one by one. x_t: the input row x[t], overwritten with y[t]; it is also stored into
// its ext row ext_t (which the backward reads); x[t - j] is ext_t j rows above.
template <typename T>
void conv_forward_row(T* x_t, T* ext_t, const T* w, int C, int taps) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  int c = 0;
  for (; c + W <= C; c += W) {
    const V x = simd_load(x_t + c);
    simd_store(ext_t + c, x);
    V acc = simd_load(w + c) * x;
    for (int j = 1; j < taps; ++j) acc += simd_load(w + int64_t(j) * C + c) * simd_load(ext_t - int64_t(j) * C + c);
    simd_store(x_t + c, acc);
  }
  for (; c < C; ++c) {
    const T x = x_t[c];
    ext_t[c] = x;
    T acc = w[c] * x;
    for (int j = 1; j < taps; ++j) acc += w[int64_t(j) * C + c] * ext_t[c - int64_t(j) * C];
    x_t[c] = acc;
  }
}

// dw[j, c + g W ..) += sum_t dy[t] x[t - j] for taps j0 <= j < j0 + NT and G registers of channels,
// over the forward's taps of each output t, t in order: G NT accumulators in registers across
// the rows (one accumulator a pass waited on its own multiply-add's latency every row).
// Scalar (W = 1, G = 1) is the tail.
template <typename T, int W, int G, int NT>
void conv_dw_block(T* dw, const T* dy, const T* ext, int T_len, int C, int K, int c, int j0, const uint8_t* starts) {
  using Acc = std::conditional_t<W == 1, T, typename Simd<T>::V>;
  const auto load = [](const T* p) -> Acc {
    if constexpr (W == 1) return *p;
    else return simd_load(p);
  };
  Acc acc[NT][G];
  for (int j = 0; j < NT; ++j)
    for (int g = 0; g < G; ++g) acc[j][g] = load(dw + int64_t(j0 + j) * C + c + g * W);
  int last_start = -1;
  for (int t = 0; t < T_len; ++t) {
    if (starts && starts[t]) last_start = t;
    const int taps = taps_at(t, K, last_start);
    const T* dt = dy + int64_t(t) * C + c;
    if constexpr (W > 1) {  // rows C apart, a register or two of each: the prefetcher does not follow
      __builtin_prefetch(dt + kConvPrefetchRows * int64_t(C));
      __builtin_prefetch(ext + int64_t(K - 1 + t - j0 + kConvPrefetchRows) * C + c);
    }
    Acc d[G];
    for (int g = 0; g < G; ++g) d[g] = load(dt + g * W);
    for (int j = 0; j < NT; ++j) {
      if (j0 + j >= taps) break;
      const T* xj = ext + int64_t(K - 1 + t - j0 - j) * C + c;
      for (int g = 0; g < G; ++g) acc[j][g] += d[g] * load(xj + g * W);
    }
  }
  for (int j = 0; j < NT; ++j)
    for (int g = 0; g < G; ++g) {
      if constexpr (W == 1) dw[int64_t(j0 + j) * C + c + g] = acc[j][g];
      else simd_store(dw + int64_t(j0 + j) * C + c + g * W, acc[j][g]);
    }
}

// Every tap of G registers of channels at c: taps in blocks of up to 4 (the accumulators of a
// block fit the register file: 4 G of them).
template <typename T, int W, int G>
void conv_dw_lanes(T* dw, const T* dy, const T* ext, int T_len, int C, int K, int c, const uint8_t* starts) {
  int j0 = 0;
  for (; j0 + 4 <= K; j0 += 4) conv_dw_block<T, W, G, 4>(dw, dy, ext, T_len, C, K, c, j0, starts);
  switch (K - j0) {
    case 3: conv_dw_block<T, W, G, 3>(dw, dy, ext, T_len, C, K, c, j0, starts); break;
    case 2: conv_dw_block<T, W, G, 2>(dw, dy, ext, T_len, C, K, c, j0, starts); break;
    case 1: conv_dw_block<T, W, G, 1>(dw, dy, ext, T_len, C, K, c, j0, starts); break;
    default: break;
  }
}

// dx[t] = sum_{j < taps} w[j] dy[t + j] in place, t ascending (rows > t are still dy). taps: the
// outputs t + j that read x[t] (in its document).
template <typename T, int W>
void conv_dx_lanes(T* dy_dx, const T* w, int T_len, int C, int K, int c, const uint8_t* starts) {
  using V = typename Simd<T>::V;
  for (int t = 0; t < T_len; ++t) {
    T* dt = dy_dx + int64_t(t) * C + c;
    int taps = std::min(K, T_len - t);  // dy[t + j] exists for j < taps
    if (starts)  // ... and reads x[t] only while no document starts in (t, t + j]
      for (int j = 1; j < taps; ++j)
        if (starts[t + j]) {
          taps = j;
          break;
        }
    if constexpr (W == 1) {
      T acc = dt[0] * w[c];
      for (int j = 1; j < taps; ++j) acc += w[int64_t(j) * C + c] * dt[int64_t(j) * C];
      dt[0] = acc;
    } else {
      V acc = simd_load(dt) * simd_load(w + c);
      for (int j = 1; j < taps; ++j) acc += simd_load(w + int64_t(j) * C + c) * simd_load(dt + int64_t(j) * C);
      simd_store(dt, acc);
    }
  }
}

}  // namespace

template <typename T>
void short_conv_forward(T* x, T* ext, const T* w, int T_len, int C, int K, const uint8_t* starts) {
  int last_start = -1;
  for (int t = 0; t < T_len; ++t) {
    if (starts && starts[t]) last_start = t;
    conv_forward_row(x + int64_t(t) * C, ext + int64_t(K - 1 + t) * C, w, C, taps_at(t, K, last_start));
  }
}

template <typename T>
void short_conv_backward(T* dy_dx, T* dw, const T* ext, const T* w, int T_len, int C, int K, int c0, int c1,
                         const uint8_t* starts) {
  constexpr int W = Simd<T>::W;
  // dw first: it reads dy, which dx then overwrites. Two registers of channels a pass (4 taps x 2
  // accumulators plus the loads fit even 16 registers), then one, then the tail channel by channel.
  int c = c0;
  for (; c + 2 * W <= c1; c += 2 * W) conv_dw_lanes<T, W, 2>(dw, dy_dx, ext, T_len, C, K, c, starts);
  for (; c + W <= c1; c += W) conv_dw_lanes<T, W, 1>(dw, dy_dx, ext, T_len, C, K, c, starts);
  for (; c < c1; ++c) conv_dw_lanes<T, 1, 1>(dw, dy_dx, ext, T_len, C, K, c, starts);
  c = c0;
  for (; c + W <= c1; c += W) conv_dx_lanes<T, W>(dy_dx, w, T_len, C, K, c, starts);
  for (; c < c1; ++c) conv_dx_lanes<T, 1>(dy_dx, w, T_len, C, K, c, starts);
}

// One token of one tensor, as conv_forward_row computes a row (the same sums in the same order, so
// a step gives the prefill's bits): a register of channels at a time, then the tail. hist (K-1, C):
// row K-1-j holds x[t - j]; it moves up a row and takes x as its newest. A channel at a time, the
// K taps and the shift of each channel were scalar loads strided C apart: at 4x128 and 64 decoding
// rows the convolution took as long as the attention's state pass.
template <typename T>
void short_conv_step(T* x, T* hist, const T* w, int C, int K) {
  using V = typename Simd<T>::V;
  constexpr int W = Simd<T>::W;
  int c = 0;
  for (; c + W <= C; c += W) {
    const V xv = simd_load(x + c);
    V acc = simd_load(w + c) * xv;
    for (int j = 1; j < K; ++j) acc += simd_load(w + int64_t(j) * C + c) * simd_load(hist + int64_t(K - 1 - j) * C + c);
    for (int r = 0; r + 1 < K - 1; ++r)  // (V(): an unaligned load; bound as a V&, an aligned one)
      simd_store(hist + int64_t(r) * C + c, V(simd_load(hist + int64_t(r + 1) * C + c)));
    if (K > 1) simd_store(hist + int64_t(K - 2) * C + c, xv);
    simd_store(x + c, acc);
  }
  for (; c < C; ++c) {
    const T xc = x[c];
    T acc = w[c] * xc;
    for (int j = 1; j < K; ++j) acc += w[int64_t(j) * C + c] * hist[int64_t(K - 1 - j) * C + c];
    for (int r = 0; r + 1 < K - 1; ++r) hist[int64_t(r) * C + c] = hist[int64_t(r + 1) * C + c];
    if (K > 1) hist[int64_t(K - 2) * C + c] = xc;
    x[c] = acc;
  }
}

template <typename T>
void short_conv_apply(const AttentionSpec& s, const ShortConvCall<T>& a) {
  const int K = s.short_conv, C = s.C(), H = K - 1;
  RFA_ASSERT(K >= 1 && a.ext != nullptr, "short conv of {} taps", K);
  const int64_t row_ext = int64_t(H + a.T_len) * C, hist = int64_t(H) * C;
  const int64_t work = int64_t(a.T_len) * C * K;
  // Item (b, i): tensor i of row b, all in its own ext and output row. Row-major, so that a thread
  // takes whole batch rows, q, k and v together: the attention's tasks (attention_tasks.h) then
  // find the rows they read in their own core's cache.
  parallel_for(3 * int64_t(a.B), parallel_grain(work), [&](int64_t item) {
    const int i = static_cast<int>(item % 3), b = static_cast<int>(item / 3);
    T* ext = a.ext + (int64_t(i) * a.B + b) * row_ext;
    T* x = a.x[i] + int64_t(b) * a.T_len * C;  // (T, C): the inputs, then the outputs
    const T* in = a.hist_in ? a.hist_in + b * a.hist_stride + i * hist : nullptr;
    if (in) std::memcpy(ext, in, sizeof(T) * size_t(hist));
    else std::fill(ext, ext + hist, T(0));
    short_conv_forward(x, ext, a.w[i], a.T_len, C, K, a.starts ? a.starts + int64_t(b) * a.T_len : nullptr);
    if (a.hist_out)  // the last K-1 rows of ext: the history after the segment
      std::memcpy(a.hist_out + b * a.hist_stride + i * hist, ext + int64_t(a.T_len) * C, sizeof(T) * size_t(hist));
  });
}

template <typename T>
void short_conv_apply_backward(const AttentionSpec& s, const T* const w[3], T* const dw[3], T* const dx[3],
                               const T* ext, int B, int T_len, const uint8_t* starts) {
  const int K = s.short_conv, C = s.C(), H = K - 1;
  const int blocks = (C + kChannelBlock - 1) / kChannelBlock;
  const int64_t row_ext = int64_t(H + T_len) * C;
  const int64_t work = int64_t(B) * T_len * kChannelBlock * K * 2;
  // Item (i, block): every row's channels of the block, in row order (one thread adds into
  // each dw element: the sum's order does not depend on the thread count).
  parallel_for(3 * int64_t(blocks), parallel_grain(work), [&](int64_t item) {
    const int i = static_cast<int>(item / blocks), c0 = static_cast<int>(item % blocks) * kChannelBlock;
    const int c1 = std::min(C, c0 + kChannelBlock);
    for (int b = 0; b < B; ++b)
      short_conv_backward(dx[i] + int64_t(b) * T_len * C, dw[i], ext + (int64_t(i) * B + b) * row_ext, w[i], T_len, C,
                          K, c0, c1, starts ? starts + int64_t(b) * T_len : nullptr);
  });
}

template <typename T>
void short_conv_apply_step(const AttentionSpec& s, const T* const w[3], T* const x[3], T* hist, int64_t hist_stride,
                           const AttentionRows& rows) {
  const int K = s.short_conv, C = s.C();
  const int64_t h = int64_t(K - 1) * C;
  // Item (row, tensor): its own row of x and of the history. Across the pool where the step's rows
  // hold enough (6x384, 64 rows: 0.44 ms of a 7.3 ms step on the calling thread alone); serial
  // inside a row split's region.
  parallel_for(int64_t(rows.n) * 3, parallel_grain(int64_t(C) * K), [&](int64_t item) {
    const int r = static_cast<int>(item / 3), i = static_cast<int>(item % 3);
    short_conv_step(x[i] + int64_t(r) * C, hist + rows.state_row(r) * hist_stride + i * h, w[i], C, K);
  });
}

#define RFA_INSTANTIATE(T)                                                                                        \
  template void short_conv_forward<T>(T*, T*, const T*, int, int, int, const uint8_t*);                          \
  template void short_conv_backward<T>(T*, T*, const T*, const T*, int, int, int, int, int, const uint8_t*);     \
  template void short_conv_step<T>(T*, T*, const T*, int, int);                                                   \
  template void short_conv_apply<T>(const AttentionSpec&, const ShortConvCall<T>&);                               \
  template void short_conv_apply_backward<T>(const AttentionSpec&, const T* const[3], T* const[3], T* const[3],   \
                                             const T*, int, int, const uint8_t*);                                 \
  template void short_conv_apply_step<T>(const AttentionSpec&, const T* const[3], T* const[3], T*, int64_t,       \
                                         const AttentionRows&);
RFA_INSTANTIATE(float)
RFA_INSTANTIATE(double)
#undef RFA_INSTANTIATE

}  // namespace rfa
