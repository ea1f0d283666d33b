#include "model/model_flops.h"

#include "attention/attention_core.h"

namespace rfa {

int64_t model_matmul_params(const ModelSpec& s) {
  const int64_t C = s.C, Hf = s.Hf;
  return int64_t(s.L) * (4 * C * C + 3 * C * Hf) + int64_t(s.V) * C;
}

FlopCount model_train_flops(const ModelSpec& s, int64_t batch, int64_t T) {
  const double tokens = double(batch) * double(T);
  FlopCount f;
  f.matmul = 6.0 * double(model_matmul_params(s)) * tokens;
  for (const AttentionSpec& a : s.attn)
    f.attention += (attention_forward_flops_per_token(a, T) + attention_backward_flops_per_token(a, T)) * tokens;
  return f;
}

}  // namespace rfa
