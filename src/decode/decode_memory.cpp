#include "decode/decode_memory.h"

#include <fmt/format.h>

#include <algorithm>

#include "attention/rfa_attention.h"

namespace rfa {

MemoryEstimate memory_estimate_decoder(const ModelSpec& s, const DecoderOptions& o, int threads,
                                       const std::string& segment_keys, const std::string& positions_keys) {
  constexpr double kFloat = sizeof(float);
  const double B = o.batch, S = o.max_segment, N = B * S, C = s.C, V = s.V, Hf = s.Hf;
  // The arena (decoder.cpp): x, n, q, k, v, att (B, S, C); gate_up, act; rstd; logits (B, S, V); last (B, V);
  // the transposed random matrices; plus the staging tokens (B, S).
  double elements = 6 * N * C + 3 * N * Hf + N + N * V + B * V;
  double workspace = 0;
  MemoryEstimate e;
  if (s.is_rfa()) {
    const RfaConfig c = rfa_config_from(s.attention);
    // Affine in the batch: evaluated at 1 and 2 rows, where no size_t product overflows.
    const double one = double(rfa_workspace_size(c, {1, o.max_segment, s.H, s.Dh}, threads));
    const double two = double(rfa_workspace_size(c, {2, o.max_segment, s.H, s.Dh}, threads));
    workspace = one + (B - 1) * (two - one);
    elements += double(s.L) * s.H * s.D * s.Dh;
    e.add("RFA state", double(s.L) * B * s.H * rfa_feature_count(c) * (s.Dh + 1) * kFloat,
          fmt::format("attention.num_features ({}) of the model", s.D));
  } else {
    const bool ring = o.window > 0;
    const double slots = ring ? std::min<double>(o.window, o.max_positions) : double(o.max_positions);
    const double b = std::min(S, slots);
    workspace = ring ? b * (slots + b) : S * slots;
    // Per layer: keys and values (B, H, slots, Dh) and a score row (B, H, slots).
    e.add("KV cache", double(s.L) * B * s.H * slots * (2.0 * s.Dh + 1) * kFloat, positions_keys);
    if (s.rope)
      e.add("RoPE table of the decoded positions", double(o.max_positions) * s.Dh * (sizeof(float) + sizeof(double)), positions_keys);
  }
  e.add("decoding activations", (elements + workspace) * kFloat + N * sizeof(int32_t), segment_keys);
  return e;
}

}  // namespace rfa
