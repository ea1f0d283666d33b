#include "attention/random_features.h"

#include <cmath>
#include <cstddef>

#include "core/error.h"
#include "core/rng.h"

namespace rfa {
namespace {

// Orthonormalises rows [0, n) of the (n, Dh) block in place: modified Gram-Schmidt
// run twice ("twice is enough") so float blocks are orthogonal to rounding.
template <typename T>
void orthonormalize_rows(T* block, int n, int Dh) {
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < n; ++i) {
      T* row = block + static_cast<size_t>(i) * Dh;
      for (int p = 0; p < i; ++p) {
        const T* prev = block + static_cast<size_t>(p) * Dh;
        double dot = 0;
        for (int j = 0; j < Dh; ++j) dot += double(row[j]) * double(prev[j]);
        for (int j = 0; j < Dh; ++j) row[j] -= T(dot) * prev[j];
      }
      double norm_sq = 0;
      for (int j = 0; j < Dh; ++j) norm_sq += double(row[j]) * double(row[j]);
      RFA_ASSERT(norm_sq > 0, "degenerate Gaussian block");
      T inv = T(1.0 / std::sqrt(norm_sq));
      for (int j = 0; j < Dh; ++j) row[j] *= inv;
    }
  }
}

}  // namespace

template <typename T>
void random_features_draw(T* W, uint64_t seed, uint64_t step, int layer, int H, int D, int Dh, bool orthogonal) {
  if (H <= 0 || D <= 0 || Dh <= 0) fail("random features: H={} D={} Dh={} must all be positive", H, D, Dh);
  for (int h = 0; h < H; ++h) {
    CounterRng rng(seed, step, static_cast<uint64_t>(layer), static_cast<uint64_t>(h));
    T* Wh = W + static_cast<size_t>(h) * D * Dh;
    for (size_t i = 0; i < static_cast<size_t>(D) * Dh; ++i) Wh[i] = T(rng.normal());
    if (!orthogonal) continue;
    // Blocks of up to Dh rows: orthonormal rows, each rescaled by a chi(Dh) norm
    // (the norm of a fresh Gaussian vector), keeping the marginal of each row Gaussian.
    for (int start = 0; start < D; start += Dh) {
      int n = D - start < Dh ? D - start : Dh;
      T* block = Wh + static_cast<size_t>(start) * Dh;
      orthonormalize_rows(block, n, Dh);
      for (int i = 0; i < n; ++i) {
        double norm_sq = 0;
        for (int j = 0; j < Dh; ++j) {
          double z = rng.normal();
          norm_sq += z * z;
        }
        T norm = T(std::sqrt(norm_sq));
        for (int j = 0; j < Dh; ++j) block[static_cast<size_t>(i) * Dh + j] *= norm;
      }
    }
  }
}

template void random_features_draw<float>(float*, uint64_t, uint64_t, int, int, int, int, bool);
template void random_features_draw<double>(double*, uint64_t, uint64_t, int, int, int, int, bool);

}  // namespace rfa
