#include "attention/attention_memory.h"

#include <algorithm>
#include <set>
#include <utility>

#include "attention/attention_kind.h"
#include "attention/short_conv.h"

namespace rfa {

AttentionDecodeMemory attention_decode_memory(const AttentionSpec& s, const AttentionStateOptions& o, int S,
                                              int threads) {
  AttentionDecodeMemory m = attention_kind_def(s.kind).decode_memory(s, o, S, threads);
  if (s.short_conv > 0) {  // attention_decode.cpp: the history tensor per row; its ext rows in the prefill scratch
    m.state += double(o.B) * double(short_conv_history_size(s));
    m.scratch = std::max(m.scratch, 3.0 * o.B * (s.short_conv - 1 + S) * s.C());
  }
  if (s.output_gate) {  // the step's z (B, C), counted with the state as the kind's step scratch; the prefill's z
    m.state += double(o.B) * s.C();
    m.scratch = std::max(m.scratch, double(o.B) * S * s.C());
  }
  return m;
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
