#include "attention/attention_memory.h"

#include "attention/attention_kind.h"

namespace rfa {

AttentionDecodeMemory attention_decode_memory(const AttentionSpec& s, const AttentionStateOptions& o, int S,
                                              int threads) {
  return attention_kind_def(s.kind).decode_memory(s, o, S, threads);
}

double attention_rope_table_bytes(const AttentionSpec& s, double positions) {
  // RopeTable: cos and sin, (positions, Dh/2), in float and in double.
  return s.rope ? positions * s.Dh * (sizeof(float) + sizeof(double)) : 0;
}

}  // namespace rfa
