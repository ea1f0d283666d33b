#pragma once
// Every attention kind and option the model-level tests walk, in one list: the kinds
// (softmax, rfa, rfa_gate, rfa_delta), both gates (attention.gate scalar, feature), both feature maps
// (gaussian, arccos), the time discount (attention.time_discount log) on either RFA kind,
// RoPE on softmax and on either RFA kind, softmax with a trained sliding window (attention.window)
// alone and in a hybrid, and models whose layers differ (attention.layers). A test loops over attention_variants() (or a filtered part of
// it) instead of a hand-written list of kinds, so a new kind or option added here reaches
// causality, gradient, decoding, resume, memory and no-allocation tests alike
// (docs/attention-kinds.md, step 3).
#include <cassert>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace rfa::test {

struct AttentionVariant {
  const char* name;
  void (*apply)(Config&);  // sets attention.* (and attention.layers from model.n_layers) on a config
  bool grows = false;      // some layer's decoding state grows (full softmax): no stateful training, no --save-state
  bool draws = true;       // some layer draws random matrices (an RFA kind)
  bool mixed = false;      // the layers differ
  bool rope = false;       // some layer rotates by position (no stateful training)
};

namespace variant_detail {

// "a, b, a, b, ...": n entries alternating two.
inline std::string alternate(const char* a, const char* b, int n) {
  std::string out;
  for (int l = 0; l < n; ++l) out += std::string(l ? ", " : "") + (l % 2 ? b : a);
  return out;
}

}  // namespace variant_detail

inline const std::vector<AttentionVariant>& attention_variants() {
  using namespace variant_detail;
  static const std::vector<AttentionVariant> all = {
      {"softmax (rope)", [](Config& c) { c.attention.kind = AttentionKind::softmax; }, true, false, false, true},
      {"softmax without positions",
       [](Config& c) {
         c.attention.kind = AttentionKind::softmax;
         c.attention.positions = PositionKind::none;
       },
       true, false},
      {"rfa gaussian", [](Config& c) { c.attention.kind = AttentionKind::rfa; }},
      {"rfa arccos",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa;
         c.attention.feature_map = FeatureMapKind::arccos;
       }},
      {"rfa time discount",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa;
         c.attention.time_discount = TimeDiscountKind::log;
       }},
      {"rfa with rope",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa;
         c.attention.positions = PositionKind::rope;
       },
       false, true, false, true},
      {"rfa_gate gaussian", [](Config& c) { c.attention.kind = AttentionKind::rfa_gate; }},
      {"rfa_gate arccos",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.feature_map = FeatureMapKind::arccos;
       }},
      {"rfa_gate feature gate",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.gate = GateKind::feature;
       }},
      {"rfa_gate time discount",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.time_discount = TimeDiscountKind::log;
       }},
      {"rfa_gate feature gate and time discount",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.gate = GateKind::feature;
         c.attention.time_discount = TimeDiscountKind::log;
       }},
      {"rfa_gate with rope",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.positions = PositionKind::rope;
       },
       false, true, false, true},
      {"layers: rfa_gate and softmax in turn",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.layers = alternate("rfa_gate", "softmax", c.model.n_layers);
       },
       true, true, true, true},
      {"layers: rfa_gate feature gate and rfa arccos in turn",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.layers = alternate("rfa_gate gate=feature", "rfa feature_map=arccos num_features=3",
                                        c.model.n_layers);
       },
       false, true, true},
      // The short convolution on q, k, v (attention.short_conv, docs/short-conv.md), on a kind
      // with a carried state and on softmax with RoPE, and per layer with other tap counts.
      {"rfa_gate short conv 4",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.short_conv = 4;
       }},
      {"softmax (rope) short conv 4",
       [](Config& c) {
         c.attention.kind = AttentionKind::softmax;
         c.attention.short_conv = 4;
       },
       true, false, false, true},
      {"layers: rfa_gate short conv 3 and rfa short conv 2 in turn",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.layers = alternate("rfa_gate short_conv=3", "rfa short_conv=2", c.model.n_layers);
       },
       false, true, true},
      // The output norm and gate (attention.output_gate, docs/output-gate.md): on a kind whose own
      // backward writes dn (rfa_gate) and on softmax with RoPE; per layer on rfa (whose backward
      // leaves dn to the gate) and after a short convolution (the parameters' order).
      {"rfa_gate output gate",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.output_gate = true;
       }},
      {"softmax (rope) output gate",
       [](Config& c) {
         c.attention.kind = AttentionKind::softmax;
         c.attention.output_gate = true;
       },
       true, false, false, true},
      {"layers: rfa output gate and rfa_gate short conv 2 with output gate in turn",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.layers = alternate("rfa output_gate=true", "rfa_gate short_conv=2 output_gate=true",
                                        c.model.n_layers);
       },
       false, true, true},
      // A trained sliding window on softmax (attention.window, docs/hybrid.md): a fixed-size
      // state (a ring of 3 slots) shorter than the tests' texts, alone and in a hybrid.
      {"softmax (rope) window 3",
       [](Config& c) {
         c.attention.kind = AttentionKind::softmax;
         c.attention.window = 3;
       },
       false, false, false, true},
      {"layers: rfa_gate and softmax window=3 in turn",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_gate;
         c.attention.layers = alternate("rfa_gate", "softmax window=3", c.model.n_layers);
       },
       false, true, true, true},
      // The gated delta rule (attention.kind rfa_delta, docs/delta-rule.md): alone, and per layer
      // with the short convolution beside rfa_gate.
      {"rfa_delta", [](Config& c) { c.attention.kind = AttentionKind::rfa_delta; }},
      // All ten attention tensors a layer can hold: the kind's five, the convolution's three, the gate's two.
      {"rfa_delta short conv 3 output gate",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_delta;
         c.attention.short_conv = 3;
         c.attention.output_gate = true;
       }},
      {"layers: rfa_delta short conv 4 and rfa_gate in turn",
       [](Config& c) {
         c.attention.kind = AttentionKind::rfa_delta;
         c.attention.layers = alternate("rfa_delta short_conv=4", "rfa_gate", c.model.n_layers);
       },
       false, true, true},
  };
  return all;
}

// The variant of that name (asserts it exists): for a test about one of them.
inline const AttentionVariant& attention_variant(std::string_view name) {
  for (const AttentionVariant& v : attention_variants())
    if (name == v.name) return v;
  assert(false && "no attention variant of that name");
  return attention_variants().front();
}

// The variants whose every layer keeps a fixed-size state (--save-state, one-pass evaluation).
inline std::vector<AttentionVariant> attention_variants_with_fixed_state() {
  std::vector<AttentionVariant> out;
  for (const AttentionVariant& v : attention_variants())
    if (!v.grows) out.push_back(v);
  return out;
}

// The variants stateful training runs (a fixed-size state and no RoPE in every layer).
inline std::vector<AttentionVariant> attention_variants_stateful() {
  std::vector<AttentionVariant> out;
  for (const AttentionVariant& v : attention_variants())
    if (!v.grows && !v.rope) out.push_back(v);
  return out;
}

// `c` with the variant's attention settings (apply after setting model.n_layers).
inline Config with_variant(Config c, const AttentionVariant& v) {
  v.apply(c);
  return c;
}

}  // namespace rfa::test
