#include "decode/decode_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attention/attention_memory.h"
#include "decode/step_weights.h"
#include "model/model_params.h"
#include "tensor/arena.h"

namespace rfa {
namespace {

// What a decoder that releases the model's matrices (fp32, DecoderOptions::release_model_matrices)
// gives back while it packs, at least: the whole 2 MiB pages inside each packed matrix (StepWeights'
// first pass; the rest goes once all are packed). A range of L bytes holds at least floor(L / 2 MiB)
// - 1 of them wherever it starts. `in_flight`: the most one matrix gives back, held until its packing
// thread finishes it. Nothing where the model's arena is a heap block (small, or under
// AddressSanitizer), which keeps its pages.
struct PackingRelease {
  double given_back = 0, in_flight = 0;
};

PackingRelease packing_release(const ModelSpec& s) {
  const double page = double(kHugePageBytes);
  if (!arena_mapped(static_cast<size_t>(2 * model_param_table(s).size()) * sizeof(float))) return {};
  PackingRelease r;
  for (const StepMatrixShape& m : step_matrix_shapes(s, StepPack::all)) {  // the LM head: a tied embedding's too
    const double whole = std::max(0.0, std::floor(double(m.N) * double(m.K) * sizeof(float) / page) - 1) * page;
    r.given_back += whole;
    r.in_flight = std::max(r.in_flight, whole);
  }
  return r;
}

}  // namespace

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
  const bool fp32 = o.precision != Precision::bf16;
  if (o.steps && fp32 && o.release_model_matrices) {
    // The model's pages under each matrix go back as it is packed: the peak is the packed copy less
    // what all but the matrices still in flight (one a thread) gave back by then.
    const PackingRelease r = packing_release(s);
    const double packed = double(step_weights_elements(s, StepPack::all)) * kFloat;
    const double held = std::min(packed, packed - r.given_back + std::max(threads, 1) * r.in_flight);
    e.add("packed weights of the decoding step, less the model's pages given back", held, "the model's size");
  } else if (o.steps) {  // decode/step_weights.h: every matrix, or bf16's output gates
    if (const int64_t n = step_weights_elements(s, fp32 ? StepPack::all : StepPack::gates))
      e.add("packed weights of the decoding step", double(n) * kFloat, "the model's size");
  }
  return e;
}

}  // namespace rfa
