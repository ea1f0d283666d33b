#pragma once
// What one layer's attention will reserve, estimated in double (no size_t product can
// overflow) before anything is allocated: the model's and the decoder's memory checks
// (model/memory_estimate, decode/decode_memory) ask here instead of knowing the kind.
// Each figure mirrors the allocation it estimates; tests/decode/decode_memory_test.cpp
// and tests/model/memory_estimate_test.cpp compare them with the real sizes.
#include <string>
#include <vector>

#include "attention/attention_core.h"

namespace rfa {

struct AttentionDecodeMemory {
  double state = 0;          // elements: the per-row tensors and the step's scratch (the RFA state S,
                             // or the KV cache with its score row)
  std::string state_name;    // "RFA state" or "KV cache"
  bool state_grows = false;  // the state scales with the positions (a KV cache)
  double random = 0;         // elements: the constants the decoding state keeps (RFA: the random matrices, transposed)
  std::string keys;          // what shrinks the state when it does not grow: "attention.num_features (32)"
  double scratch = 0;        // elements: the prefill scratch for segments of S tokens
};

// One layer, B rows, segments of at most S tokens.
AttentionDecodeMemory attention_decode_memory(const AttentionSpec& spec, const AttentionStateOptions& o, int S,
                                              int threads);

// Bytes of the RoPE table AttentionCore builds for `positions` (0 without RoPE).
double attention_rope_table_bytes(const AttentionSpec& spec, double positions);
// Bytes of the tables attention_cores_make builds for these layers: one per head size and theta.
double attention_rope_tables_bytes(const std::vector<AttentionSpec>& layers, double positions);

}  // namespace rfa
