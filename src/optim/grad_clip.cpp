#include "optim/grad_clip.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/parallel.h"
#include "core/step_profile.h"

namespace rfa {
namespace {

// The sum of squares is split into this many contiguous blocks, each summed in
// double and then added in order: deterministic for any thread count.
constexpr int64_t kNormBlocks = 64;

}  // namespace

double grad_norm(const float* grads, int64_t n) {
  ProfileScope profile(ProfiledKernel::grad_norm, 2.0 * double(n), sizeof(float) * double(n));
  std::array<double, kNormBlocks> partial{};
  const int64_t per_block = (n + kNormBlocks - 1) / kNormBlocks;
  parallel_for(kNormBlocks, [&](int64_t b) {
    int64_t begin = std::min(n, b * per_block), end = std::min(n, begin + per_block);
    // Eight independent lanes break the add dependency chain so the loop vectorises
    // (without -ffast-math the compiler may not reorder one running sum itself).
    double lane[8] = {};
    int64_t i = begin;
    for (; i + 8 <= end; i += 8) {
      for (int k = 0; k < 8; ++k) lane[k] += static_cast<double>(grads[i + k]) * grads[i + k];
    }
    for (; i < end; ++i) lane[0] += static_cast<double>(grads[i]) * grads[i];
    double sum = 0;
    for (double x : lane) sum += x;
    partial[b] = sum;
  });
  double total = 0;
  for (double s : partial) total += s;
  return std::sqrt(total);
}

double grad_clip(float* grads, int64_t n, double max_norm) {
  double norm = grad_norm(grads, n);
  if (max_norm > 0 && std::isfinite(norm) && norm > max_norm) {
    const float scale = static_cast<float>(max_norm / norm);
    const int64_t per_block = (n + kNormBlocks - 1) / kNormBlocks;
    parallel_for(kNormBlocks, [&](int64_t b) {
      int64_t begin = std::min(n, b * per_block), end = std::min(n, begin + per_block);
      for (int64_t i = begin; i < end; ++i) grads[i] *= scale;
    });
  }
  return norm;
}

std::optional<NonFinite> grad_find_non_finite(const float* data, int64_t n,
                                              const std::vector<NamedRange>& ranges) {
  ProfileScope profile(ProfiledKernel::grad_norm, 0, sizeof(float) * double(n));
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(data[i])) continue;
    for (const NamedRange& r : ranges) {
      if (i >= r.offset && i < r.offset + r.count) return NonFinite{r.name, i - r.offset, data[i]};
    }
    return NonFinite{"", i, data[i]};
  }
  return std::nullopt;
}

}  // namespace rfa
