#include "attention/attention_memory.h"

#include <set>
#include <utility>

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

double attention_rope_tables_bytes(const std::vector<AttentionSpec>& layers, double positions) {
  std::set<std::pair<int, double>> tables;  // (Dh, theta), as attention_cores_make shares them
  double bytes = 0;
  for (const AttentionSpec& s : layers)
    if (s.rope && tables.insert({s.Dh, s.rope_theta}).second) bytes += attention_rope_table_bytes(s, positions);
  return bytes;
}

}  // namespace rfa
