#include "model/memory_estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attention/attention_core.h"
#include "attention/attention_memory.h"
#include "core/parallel.h"
#include "model/activations.h"

namespace rfa {
namespace {

constexpr double kFloat = sizeof(float);

// Elements of one arena slice: rounded up to 64 bytes of floats (tensor/arena.h).
double slice(double n) { return std::ceil(n / 16) * 16; }

// The attention core's sizes are affine in the batch (B rows of the same
// work plus per-thread scratch): evaluated at B = 1 and 2, where no size_t
// product can overflow, and extended to B in double.
template <typename F>
double affine_in_batch(int B, F size_at) {
  const double one = static_cast<double>(size_at(1)), two = static_cast<double>(size_at(2));
  return one + (B - 1) * (two - one);
}

// The distinct keys (with values) the layers' kinds name, in layer order: "attention.num_features (32)".
std::string kind_keys(const ModelSpec& s, std::string (*keys)(const AttentionSpec&)) {
  std::string out;
  for (const AttentionSpec& a : s.attn) {
    const std::string k = keys(a);
    if (!k.empty() && out.find(k) == std::string::npos) out += (out.empty() ? "" : ", ") + k;
  }
  return out;
}

double random_elements(const ModelSpec& s) {  // every layer's random matrices, one draw
  double n = 0;
  for (const AttentionSpec& a : s.attn) n += double(attention_random_size(a));
  return n;
}

std::string weight_keys(const ModelSpec& s) {
  return fmt::format("model.n_layers ({}), model.d_model ({}), model.ffn_hidden ({}) or the vocabulary ({})", s.L,
                     s.C, s.Hf, s.V);
}

}  // namespace

double memory_param_elements(const ModelSpec& s) {
  const double V = s.V, C = s.C, Hf = s.Hf;
  const double layer = slice(C) + 4 * slice(C * C) + slice(C) + slice(2 * Hf * C) + slice(Hf * C);
  double attn = 0;  // each layer's own tensors
  for (const AttentionSpec& a : s.attn)
    for (const AttentionParam& p : attention_params(a)) {
      double n = 1;
      for (int64_t d : p.shape) n *= double(d);
      attn += slice(n);
    }
  return slice(V * C) + s.L * layer + attn + slice(C) + (s.model.tie_embeddings ? 0 : slice(V * C));
}

double memory_activation_elements(const ModelSpec& s, int B, int T, int threads, Precision precision) {
  const double N = double(B) * T, C = s.C, V = s.V, Hf = s.Hf;
  double saved = 0, scratch = 0;  // each layer's saved activations; the largest layer's scratch (shared)
  for (const AttentionSpec& a : s.attn) {
    saved += slice(affine_in_batch(B, [&](int b) { return attention_saved_size(a, b, T); }));
    scratch = std::max(scratch, affine_in_batch(B, [&](int b) { return attention_scratch_size(a, b, T, threads); }));
  }
  const double layer = 8 * slice(N * C) + 2 * slice(N) + slice(2 * N * Hf) + slice(N * Hf);
  const double final = 2 * slice(N * C) + 2 * slice(N) + 2 * slice(N * V);
  const double grads = 6 * slice(N * C) + slice(2 * N * Hf) + slice(N * Hf) + slice(N * V) + slice(N) + slice(scratch) +
                       slice(double(activation_gemm_partials(s, B, T, threads)));
  double bf16 = 0;  // n bf16 values take ceil(n / 2) float elements
  if (precision == Precision::bf16) {
    auto half = [](double n) { return slice(std::ceil(n / 2)); };
    bf16 = s.L * (3 * half(N * C) + half(N * Hf)) + half(N * C) + half(N * std::max({V, 2 * Hf, C}));
  }
  return s.L * layer + saved + final + grads + bf16;
}

MemoryEstimate memory_estimate_model(const ModelSpec& s, Precision precision, ModelUse use) {
  MemoryEstimate e;
  const double P = memory_param_elements(s);
  e.add("weights", P * kFloat, weight_keys(s));
  if (use == ModelUse::train) e.add("gradients", P * kFloat, weight_keys(s));
  if (precision == Precision::bf16) e.add("bf16 weight copies", P * 2, weight_keys(s));
  // The per-step draw and the fixed one (model.h).
  if (random_elements(s) > 0)
    e.add("random feature matrices", 2.0 * random_elements(s) * kFloat,
          fmt::format("{} or model.n_layers ({})", kind_keys(s, attention_state_keys), s.L));
  if (const double rope = attention_rope_tables_bytes(s.attn, double(s.model.context_length)); rope > 0)
    e.add("RoPE table", rope, fmt::format("model.context_length ({})", s.model.context_length));
  return e;
}

MemoryEstimate memory_estimate_train(const ModelSpec& s, const TrainConfig& train, int threads, int ranks,
                                     ThreadSplit split) {
  MemoryEstimate e = memory_estimate_model(s, train.precision);
  e.add("AdamW m and v", 2 * memory_param_elements(s) * kFloat, weight_keys(s));
  const int B = train.batch_size, T = s.model.context_length;
  const std::string attn_keys = kind_keys(s, attention_activation_keys);
  const std::string keys = fmt::format("train.batch_size ({}), model.context_length ({}){}{} or model.n_layers ({})", B,
                                       T, attn_keys.empty() ? "" : ", ", attn_keys, s.L);
  // Activations plus the micro-batch's input and target tokens (int32).
  double acts = 0;
  if (split == ThreadSplit::batch) {  // each thread's rows [B t / n, B (t + 1) / n) (train/batch_shards.h)
    for (int t = 0; t < threads; ++t) {
      const int rows = int(partition_begin(B, t + 1, threads) - partition_begin(B, t, threads));
      acts += memory_activation_elements(s, rows, T, 1, train.precision);
    }
    e.add("gradient copies", double(threads - 1) * memory_param_elements(s) * kFloat,
          fmt::format("train.thread_split (batch: one copy a thread past the first, {} threads) or the weights ({})",
                      threads, weight_keys(s)));
  } else {
    acts = memory_activation_elements(s, B, T, threads, train.precision);
  }
  e.add("activations", acts * kFloat + 2.0 * B * T * sizeof(int32_t), keys);
  if (train.stateful) {
    // TrainSession's (2, grad_accum, slot) and StreamCheckpoint's (ranks x grad_accum, slot) and
    // (ranks x grad_accum, B) offsets, slot = every layer's (B, carry shape): three arenas, each
    // rounded to 64 bytes.
    auto arena = [](double bytes) { return std::ceil(bytes / 64) * 64; };
    double slot = 0;
    for (const AttentionSpec& a : s.attn) slot += double(attention_carry_size(a, 1)) * B;
    const double micro = double(train.grad_accum);
    e.add("carried states",
          arena(2 * micro * slot * kFloat) + arena(ranks * micro * slot * kFloat) + arena(ranks * micro * B * 8.0),
          fmt::format("train.batch_size ({}), train.grad_accum ({}), {} or model.n_layers ({})", B, train.grad_accum,
                      kind_keys(s, attention_state_keys), s.L));
  }
  return e;
}

}  // namespace rfa
