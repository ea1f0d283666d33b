#pragma once
// The decoder-versus-training-forward fixtures (decoder_test.cpp, decoder_bf16_test.cpp): a
// tiny model of (B=2, T=13, V=17), its tokens, the training forward's logits and the
// decoder's logits over the same tokens by any mix of prefill segments and steps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "decode/decoder.h"
#include "model/activations.h"
#include "model/model.h"
#include "model/model_forward.h"
#include "support/tiny_model.h"

namespace rfa::test::decoder_cases {

inline constexpr int kB = 2, kT = 13, kV = 17;

inline ModelSpec small_spec(AttentionKind kind, FeatureMapKind map = FeatureMapKind::gaussian,
                     PositionKind positions = PositionKind::automatic) {
  // init_std 0.3: large enough that logits vary strongly with the context;
  // chunk 4: T = 13 spans four chunks, the last one partial.
  Config c = test::tiny_config(kind, {.vocab = kV, .context = kT, .num_features = 5, .chunk_size = 4, .init_std = 0.3});
  c.attention.feature_map = map;
  c.attention.positions = positions;
  c.attention.gate_bias_init = 0.5;
  return test::tiny_spec(c);
}

inline std::vector<int32_t> tokens_make(uint64_t seed) {
  CounterRng rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(kB) * kT);
  for (auto& x : t) x = static_cast<int32_t>(rng.below(kV));
  return t;
}

// Logits (B, T, V) of the training forward.
template <typename T>
std::vector<T> full_forward(Model<T>& model, const std::vector<int32_t>& tokens) {
  Activations<T> acts(model.spec, kB, kT, model.precision);
  model_forward(model, acts, tokens.data(), nullptr, model.random_fixed());
  return std::vector<T>(acts.logits, acts.logits + static_cast<size_t>(kB) * kT * kV);
}

// Decodes tokens (B, T): prefill the first `prefill` positions in segments of
// at most `segment`, then step through the rest. Returns logits (B, T, V).
// window > 0: softmax attends over the last `window` positions (a ring KV cache).
template <typename T>
std::vector<T> decode(Model<T>& model, const std::vector<int32_t>& tokens, int prefill, int segment, int window = 0,
                      Precision precision = Precision::fp32) {
  DecoderOptions o;
  o.precision = precision;
  o.batch = kB;
  o.max_segment = segment;
  o.max_positions = kT;
  o.window = window;
  Decoder<T> dec(model, o);
  std::vector<T> out(static_cast<size_t>(kB) * kT * kV);
  std::vector<int32_t> seg(static_cast<size_t>(kB) * segment);
  int t0 = 0;
  while (t0 < prefill) {
    const int S = std::min(segment, prefill - t0);
    for (int b = 0; b < kB; ++b)
      for (int t = 0; t < S; ++t) seg[static_cast<size_t>(b * S + t)] = tokens[static_cast<size_t>(b * kT + t0 + t)];
    const T* logits = dec.prefill(seg.data(), S);
    for (int b = 0; b < kB; ++b)
      for (int t = 0; t < S; ++t)
        std::copy(logits + (b * S + t) * kV, logits + (b * S + t + 1) * kV, out.begin() + (b * kT + t0 + t) * kV);
    t0 += S;
  }
  for (int t = prefill; t < kT; ++t) {
    int32_t step_tokens[kB];
    for (int b = 0; b < kB; ++b) step_tokens[b] = tokens[static_cast<size_t>(b * kT + t)];
    const T* logits = dec.step(step_tokens);
    for (int b = 0; b < kB; ++b) std::copy(logits + b * kV, logits + (b + 1) * kV, out.begin() + (b * kT + t) * kV);
  }
  CHECK(dec.position() == kT);
  return out;
}

// |a - b| / |b| (Frobenius norms).
inline double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    ref += double(b[i]) * b[i];
  }
  return std::sqrt(diff / ref);
}

}  // namespace rfa::test::decoder_cases
