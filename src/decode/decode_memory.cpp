#include "decode/decode_memory.h"

#include <fmt/format.h>

#include <algorithm>

#include "attention/attention_memory.h"
#include "decode/step_weights.h"

namespace rfa {

MemoryEstimate memory_estimate_decoder(const ModelSpec& s, const DecoderOptions& o, int threads,
                                       const std::string& segment_keys, const std::string& positions_keys) {
  constexpr double kFloat = sizeof(float);
  const double B = o.batch, S = o.max_segment, P = o.prefill_rows ? o.prefill_rows : B, C = s.C, V = s.V, Hf = s.Hf,
               L = s.L;
  const double N = std::max(P * S, B);  // rows of the block buffers: a prefill's (P, S), a step's B
  // The arena (decoder.cpp): the block buffers (8 of (N, C), 2 of (N), gate_up (N, 2Hf), act (N, Hf)),
  // logits (N, V), last (B, V) and the attention's prefill scratch for P rows; plus the staging
  // tokens (P, S).
  AttentionStateOptions so;
  so.B = o.batch;
  so.max_positions = o.max_positions;
  so.window = o.window;
  AttentionStateOptions prefill_so = so;  // the prefill scratch covers P rows
  prefill_so.B = static_cast<int>(P);
  // Each layer's state and constants; the largest layer's prefill scratch (one layer at a time).
  double state = 0, random = 0, scratch = 0;
  bool grows = false;
  std::string state_name, keys;
  for (const AttentionSpec& layer : s.attn) {
    const AttentionDecodeMemory a = attention_decode_memory(layer, so, o.max_segment, threads);
    state += a.state;
    random += a.random;
    scratch = std::max(scratch, attention_decode_memory(layer, prefill_so, o.max_segment, threads).scratch);
    grows = grows || a.state_grows;
    if (state_name.find(a.state_name) == std::string::npos) state_name += (state_name.empty() ? "" : " and ") + a.state_name;
    if (!a.keys.empty() && keys.find(a.keys) == std::string::npos) keys += (keys.empty() ? "" : ", ") + a.keys;
  }
  // bf16: the products' inputs (3 of (B, S, C) and (B, S, Hf)) as bf16, 2 bytes each.
  const double bf16 = o.precision == Precision::bf16 ? (3 * N * C + N * Hf) / 2 : 0;
  const double elements = 8 * N * C + 2 * N + 3 * N * Hf + N * V + B * V + scratch + bf16;
  MemoryEstimate e;
  e.add(state_name, state * kFloat, grows ? positions_keys : keys);
  if (random > 0) e.add("random matrices of the decoding state", random * kFloat, keys);
  if (const double rope = attention_rope_tables_bytes(s.attn, double(o.max_positions)); rope > 0)
    e.add("RoPE table of the decoded positions", rope, positions_keys);
  e.add("decoding activations", elements * kFloat + P * S * sizeof(int32_t), segment_keys);
  if (o.steps && o.precision == Precision::bf16)  // the step's packed bf16 weight matrices (about their plain size)
    e.add("bf16 packed weights of the decoding step", 2 * (L * (4 * C * C + 3 * Hf * C) + V * C),
          "the model's size");
  if (o.steps)  // decode/step_weights.h: every matrix, or bf16's output gates
    if (const int64_t n = step_weights_elements(s, o.precision == Precision::bf16 ? StepPack::gates : StepPack::all))
      e.add("packed weights of the decoding step", double(n) * kFloat, "the model's size");
  return e;
}

}  // namespace rfa
