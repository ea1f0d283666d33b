#include "attention/short_conv.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/parallel.h"

namespace rfa {
namespace {

constexpr int kChannelBlock = 32;  // the backward's unit of parallel work: channels [c0, c0 + 32) of one tensor

}  // namespace

int64_t short_conv_history_size(const AttentionSpec& s) {
  return s.short_conv > 0 ? 3 * int64_t(s.short_conv - 1) * s.C() : 0;
}

int64_t short_conv_ext_size(const AttentionSpec& s, int B, int T) {
  return s.short_conv > 0 ? 3 * int64_t(B) * (s.short_conv - 1 + T) * s.C() : 0;
}

// The loops run over channels innermost, contiguous in x, y and w (K, C), so they vectorise; each
// output is summed in tap order j = 0, 1, ..., K-1 in the forward, the backward and the step alike.
// With document starts (starts: (T) of the row, nonzero at a document's first token; null =
// none), tap j of output t reads x[t - j] only when no document starts in (t - j, t]: a
// document's first token sees nothing before it, as if its row began there.
template <typename T>
void short_conv_forward(T* y, const T* ext, const T* w, int T_len, int C, int K, int c0, int c1,
                        const uint8_t* starts = nullptr) {
  int last_start = -1;
  for (int t = 0; t < T_len; ++t) {
    T* yt = y + int64_t(t) * C;
    const T* xt = ext + int64_t(K - 1 + t) * C;  // x[t]; x[t - j] is j rows above
    if (starts && starts[t]) last_start = t;
    const int taps = last_start < 0 ? K : std::min(K, t - last_start + 1);
    for (int c = c0; c < c1; ++c) yt[c] = w[c] * xt[c];
    for (int j = 1; j < taps; ++j) {
      const T* wj = w + int64_t(j) * C;
      const T* xj = xt - int64_t(j) * C;
      for (int c = c0; c < c1; ++c) yt[c] += wj[c] * xj[c];
    }
  }
}

template <typename T>
void short_conv_backward(T* dy_dx, T* dw, const T* ext, const T* w, int T_len, int C, int K, int c0, int c1,
                         const uint8_t* starts = nullptr) {
  int last_start = -1;
  for (int t = 0; t < T_len; ++t) {
    T* dt = dy_dx + int64_t(t) * C;
    const T* xt = ext + int64_t(K - 1 + t) * C;
    if (starts && starts[t]) last_start = t;
    const int back = last_start < 0 ? K : std::min(K, t - last_start + 1);  // the forward's taps of output t
    for (int j = 0; j < back; ++j) {  // dw[j, c] += dy[t, c] x[t - j, c], before dy[t] is overwritten
      T* dwj = dw + int64_t(j) * C;
      const T* xj = xt - int64_t(j) * C;
      for (int c = c0; c < c1; ++c) dwj[c] += dt[c] * xj[c];
    }
    int taps = std::min(K, T_len - t);  // dy[t + j] exists for j < taps
    if (starts)  // ... and reads x[t] only while no document starts in (t, t + j]
      for (int j = 1; j < taps; ++j)
        if (starts[t + j]) {
          taps = j;
          break;
        }
    for (int c = c0; c < c1; ++c) dt[c] *= w[c];
    for (int j = 1; j < taps; ++j) {  // rows > t: still dy
      const T* wj = w + int64_t(j) * C;
      const T* dj = dt + int64_t(j) * C;
      for (int c = c0; c < c1; ++c) dt[c] += wj[c] * dj[c];
    }
  }
}

template <typename T>
void short_conv_step(T* x, T* hist, const T* w, int C, int K) {
  for (int c = 0; c < C; ++c) {
    T acc = w[c] * x[c];
    for (int j = 1; j < K; ++j) acc += w[int64_t(j) * C + c] * hist[int64_t(K - 1 - j) * C + c];  // x[t - j]: row K-1-j
    for (int r = 0; r + 1 < K - 1; ++r) hist[int64_t(r) * C + c] = hist[int64_t(r + 1) * C + c];
    if (K > 1) hist[int64_t(K - 2) * C + c] = x[c];
    x[c] = acc;
  }
}

template <typename T>
void short_conv_apply(const AttentionSpec& s, const ShortConvCall<T>& a) {
  const int K = s.short_conv, C = s.C(), H = K - 1;
  RFA_ASSERT(K >= 1 && a.ext != nullptr, "short conv of {} taps", K);
  const int64_t row_ext = int64_t(H + a.T_len) * C, hist = int64_t(H) * C;
  const int64_t work = int64_t(a.T_len) * C * K;
  // Item (i, b): tensor i of row b, all in its own ext and output row.
  parallel_for(3 * int64_t(a.B), parallel_grain(work), [&](int64_t item) {
    const int i = static_cast<int>(item / a.B), b = static_cast<int>(item % a.B);
    T* ext = a.ext + (int64_t(i) * a.B + b) * row_ext;
    T* x = a.x[i] + int64_t(b) * a.T_len * C;  // (T, C): the inputs, then the outputs
    const T* in = a.hist_in ? a.hist_in + b * a.hist_stride + i * hist : nullptr;
    if (in) std::memcpy(ext, in, sizeof(T) * size_t(hist));
    else std::fill(ext, ext + hist, T(0));
    std::memcpy(ext + hist, x, sizeof(T) * size_t(a.T_len) * C);
    if (a.hist_out)  // the last K-1 rows of ext: the history after the segment
      std::memcpy(a.hist_out + b * a.hist_stride + i * hist, ext + int64_t(a.T_len) * C, sizeof(T) * size_t(hist));
    short_conv_forward(x, ext, a.w[i], a.T_len, C, K, 0, C, a.starts ? a.starts + int64_t(b) * a.T_len : nullptr);
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
  for (int r = 0; r < rows.n; ++r)
    for (int i = 0; i < 3; ++i)
      short_conv_step(x[i] + int64_t(r) * C, hist + rows.state_row(r) * hist_stride + i * h, w[i], C, K);
}

#define RFA_INSTANTIATE(T)                                                                                        \
  template void short_conv_forward<T>(T*, const T*, const T*, int, int, int, int, int, const uint8_t*);          \
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
