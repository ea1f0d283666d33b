#include "model/model_flops.h"

#include <algorithm>

namespace rfa {

int64_t model_matmul_params(const ModelSpec& s) {
  const int64_t C = s.C, Hf = s.Hf;
  return int64_t(s.L) * (4 * C * C + 3 * C * Hf) + int64_t(s.V) * C;
}

FlopCount model_train_flops(const ModelSpec& s, int64_t batch, int64_t T) {
  const double tokens = double(batch) * double(T);
  FlopCount f;
  f.matmul = 6.0 * double(model_matmul_params(s)) * tokens;
  double per_token_layer = 0;  // forward
  if (!s.is_rfa()) {
    per_token_layer = 2.0 * s.C * double(T + 1);
  } else {
    const double D = s.D, Dh = s.Dh;
    const double F = s.attention.feature_map == FeatureMapKind::gaussian ? 2 * D : D;
    const double c = std::min<int64_t>(s.attention.chunk_size, T);
    per_token_layer = s.H * (4 * D * Dh + 4 * F * (Dh + 1) + 2 * c * F + 2 * c * (Dh + 1));
  }
  f.attention = 3.0 * per_token_layer * s.L * tokens;
  return f;
}

}  // namespace rfa
