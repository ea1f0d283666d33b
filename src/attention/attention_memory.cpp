#include "attention/attention_memory.h"

#include <algorithm>

#include "attention/rfa_attention.h"

namespace rfa {

AttentionDecodeMemory attention_decode_memory(const AttentionSpec& s, const AttentionStateOptions& o, int S,
                                              int threads) {
  const double B = o.B, H = s.H, Dh = s.Dh;
  AttentionDecodeMemory m;
  switch (s.kind) {
    case AttentionKind::softmax: {
      // kv_cache_create: keys and values (B, H, slots, Dh) and a score row (B, H, slots).
      const bool ring = o.window > 0;
      const double slots = ring ? std::min<double>(o.window, double(o.max_positions)) : double(o.max_positions);
      const double b = std::min<double>(S, slots);
      m.state = B * H * slots * (2.0 * Dh + 1);
      m.state_name = "KV cache";
      m.state_grows = true;
      m.scratch = ring ? b * (slots + b) : S * slots;  // softmax_cache_prefill_scratch
      break;
    }
    case AttentionKind::rfa:
    case AttentionKind::rfa_gate: {
      m.state = B * H * rfa_feature_count(s.rfa) * (Dh + 1);  // rfa_state_create: S and its normaliser
      m.state_name = "RFA state";
      m.random = double(s.H) * s.D * s.Dh;
      // Affine in the batch: evaluated at 1 and 2 rows, where no size_t product overflows.
      const double one = double(rfa_workspace_size(s.rfa, {1, S, s.H, s.Dh}, threads));
      const double two = double(rfa_workspace_size(s.rfa, {2, S, s.H, s.Dh}, threads));
      m.scratch = one + (B - 1) * (two - one);
      break;
    }
  }
  return m;
}

double attention_rope_table_bytes(const AttentionSpec& s, double positions) {
  // RopeTable: cos and sin, (positions, Dh/2), in float and in double.
  return s.rope ? positions * s.Dh * (sizeof(float) + sizeof(double)) : 0;
}

}  // namespace rfa
