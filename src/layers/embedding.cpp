#include "layers/embedding.h"

#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "core/step_profile.h"

namespace rfa {

// Channels per block of the backward: one 64-byte cache line of floats, so two
// threads never write the same line.
constexpr int kColumnBlock = 16;

template <typename T>
void embedding_forward(T* out, const int32_t* tokens, const T* table, int64_t N, int C) {
  ProfileScope profile(ProfiledKernel::embedding, 0, sizeof(T) * 2.0 * double(N) * C);  // N rows read and written
  parallel_for(N, [&](int64_t n) {
    std::memcpy(out + n * C, table + static_cast<int64_t>(tokens[n]) * C, sizeof(T) * C);
  });
}

template <typename T>
void embedding_backward(T* dtable, const T* dout, const int32_t* tokens, int64_t N, int C) {
  ProfileScope profile(ProfiledKernel::embedding, double(N) * C, sizeof(T) * 3.0 * double(N) * C);  // dout, dtable rows
  // forward: out[n, :] = table[tokens[n], :]
  // Rows can share a token, so split the work by channel block instead of by
  // row: each thread owns dtable[:, block] and walks all rows in order, which
  // is race-free and gives the same sums for any thread count.
  int64_t blocks = (C + kColumnBlock - 1) / kColumnBlock;
  parallel_for(blocks, [&](int64_t b) {
    int c0 = static_cast<int>(b) * kColumnBlock;
    int width = std::min(kColumnBlock, C - c0);
    for (int64_t n = 0; n < N; ++n) {
      T* dst = dtable + static_cast<int64_t>(tokens[n]) * C + c0;
      const T* src = dout + n * C + c0;
      for (int c = 0; c < width; ++c) dst[c] += src[c];
    }
  });
}

template void embedding_forward<float>(float*, const int32_t*, const float*, int64_t, int);
template void embedding_forward<double>(double*, const int32_t*, const double*, int64_t, int);
template void embedding_backward<float>(float*, const float*, const int32_t*, int64_t, int);
template void embedding_backward<double>(double*, const double*, const int32_t*, int64_t, int);

}  // namespace rfa
