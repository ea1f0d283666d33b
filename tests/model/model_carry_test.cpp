// Stateful training's forward (ModelCarry): with the same random features, running
// two consecutive segments with the state carried from the first into the second
// gives every layer the outputs of one pass over their concatenation, and the same
// final states.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "attention/attention_core.h"
#include "support/conv_taps.h"
#include "config/config.h"
#include "model/model.h"
#include "model/model_forward.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

// Largest |a - b| / (1 + |b|) between rows [t0, t0 + Ts) of a (B, Ts, W) tensor `seg` and the same
// time rows of a (B, Tall, W) tensor `all` starting at `offset`.
double max_diff(const double* seg, int Ts, const double* all, int Tall, int offset, int B, int64_t W) {
  double worst = 0;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Ts; ++t)
      for (int64_t i = 0; i < W; ++i) {
        const double x = seg[(int64_t(b) * Ts + t) * W + i], y = all[(int64_t(b) * Tall + offset + t) * W + i];
        worst = std::max(worst, std::abs(x - y) / (1 + std::abs(y)));
      }
  return worst;
}

}  // namespace

namespace {

void check_two_segments_equal_one_pass(const ModelSpec& spec, bool conv_noise = false) {
  {
    Model<double> model(spec);
    model_init(model, 21);
    if (conv_noise) test::conv_taps_randomize(model, 5);
    const int B = 2, T1 = 7, T2 = 10, T = T1 + T2, C = spec.C, V = spec.V, L = spec.L;
    std::vector<int32_t> all_in(B * T), in1(B * T1), in2(B * T2);
    for (int i = 0; i < B * T; ++i) all_in[i] = (i * 7 + 2) % V;
    for (int b = 0; b < B; ++b) {
      std::copy_n(all_in.begin() + b * T, T1, in1.begin() + b * T1);
      std::copy_n(all_in.begin() + b * T + T1, T2, in2.begin() + b * T2);
    }
    const int64_t slot = L * attention_carry_size(spec.attn[0], B);
    REQUIRE(slot > 0);
    std::vector<double> state_mid(slot), state_end(slot), state_all(slot);
    Activations<double> a_all(spec, B, T), a1(spec, B, T1), a2(spec, B, T2);
    model_forward(model, a_all, all_in.data(), nullptr, model.random_fixed(), {nullptr, state_all.data()});
    model_forward(model, a1, in1.data(), nullptr, model.random_fixed(), {nullptr, state_mid.data()});
    // The second segment's first token is token T1 of the text (the time discount's t).
    model_forward(model, a2, in2.data(), nullptr, model.random_fixed(), {state_mid.data(), state_end.data(), T1});
    for (int l = 0; l < L; ++l) {
      CAPTURE(l);
      const auto& f = a_all.layers[size_t(l)];
      // Each layer's attention output, and its block output (the next layer's input or resid_final).
      CHECK(max_diff(a1.layers[size_t(l)].attn_out, T1, f.attn_out, T, 0, B, C) < 1e-12);
      CHECK(max_diff(a2.layers[size_t(l)].attn_out, T2, f.attn_out, T, T1, B, C) < 1e-12);
      const double* out_all = l + 1 < L ? a_all.layers[size_t(l) + 1].resid_in : a_all.resid_final;
      const double* out1 = l + 1 < L ? a1.layers[size_t(l) + 1].resid_in : a1.resid_final;
      const double* out2 = l + 1 < L ? a2.layers[size_t(l) + 1].resid_in : a2.resid_final;
      CHECK(max_diff(out1, T1, out_all, T, 0, B, C) < 1e-12);
      CHECK(max_diff(out2, T2, out_all, T, T1, B, C) < 1e-12);
    }
    CHECK(max_diff(a2.logits, T2, a_all.logits, T, T1, B, V) < 1e-12);
    CHECK(max_diff(state_end.data(), 1, state_all.data(), 1, 0, 1, slot) < 1e-12);

    // Without the carried state the second segment is another computation: the test can fail.
    model_forward(model, a2, in2.data(), nullptr, model.random_fixed());
    CHECK(max_diff(a2.logits, T2, a_all.logits, T, T1, B, V) > 1e-6);
  }
}

}  // namespace

TEST_CASE("model carry: two segments with the state carried equal one pass over both, in every layer") {
  // chunk 4: the first segment ends inside a chunk, the second spans several.
  const test::TinyModel shape{.vocab = 13, .context = 17, .n_layers = 3, .chunk_size = 4, .init_std = 0.3};
  for (AttentionKind kind : {AttentionKind::rfa, AttentionKind::rfa_gate}) {
    CAPTURE(static_cast<int>(kind));
    check_two_segments_equal_one_pass(test::tiny_spec(kind, shape));
  }
  SUBCASE("feature gate") {
    Config c = test::tiny_config(AttentionKind::rfa_gate, shape);
    c.attention.gate = GateKind::feature;
    check_two_segments_equal_one_pass(test::tiny_spec(c));
  }
  SUBCASE("short convolution: its last K-1 inputs carried beside the state") {
    for (int K : {2, 4, 9}) {  // 9: the history reaches past the 7-token first segment
      CAPTURE(K);
      for (AttentionKind kind : {AttentionKind::rfa, AttentionKind::rfa_gate}) {
        Config c = test::tiny_config(kind, shape);
        c.attention.short_conv = K;
        const ModelSpec spec = test::tiny_spec(c);
        // Random taps: at init the convolution is the identity, which would carry nothing.
        check_two_segments_equal_one_pass(spec, /*conv_noise=*/true);
      }
    }
  }
  SUBCASE("time discount: the second segment continues the first's positions (ModelCarry::pos0)") {
    for (GateKind gate : {GateKind::scalar, GateKind::feature}) {
      CAPTURE(static_cast<int>(gate));
      Config c = test::tiny_config(AttentionKind::rfa_gate, shape);
      c.attention.gate = gate;
      c.attention.time_discount = TimeDiscountKind::log;
      check_two_segments_equal_one_pass(test::tiny_spec(c));
    }
  }
}

TEST_CASE("model carry: the time discount makes the second segment's position matter") {
  // Guards the test above: with the discount, starting the second segment at t = 0 instead
  // of T1 must change it, or the pos0 check there could not fail.
  Config c = test::tiny_config(AttentionKind::rfa_gate, {.vocab = 13, .context = 17, .n_layers = 2,
                                                         .chunk_size = 4, .init_std = 0.3});
  c.attention.time_discount = TimeDiscountKind::log;
  const ModelSpec spec = test::tiny_spec(c);
  Model<double> model(spec);
  model_init(model, 21);
  const int B = 1, T1 = 7, T2 = 10;
  std::vector<int32_t> in1(T1), in2(T2);
  for (int i = 0; i < T1; ++i) in1[i] = (i * 5 + 1) % spec.V;
  for (int i = 0; i < T2; ++i) in2[i] = (i * 3 + 2) % spec.V;
  std::vector<double> mid(spec.L * attention_carry_size(spec.attn[0], B));
  Activations<double> a1(spec, B, T1), at0(spec, B, T2), atT1(spec, B, T2);
  model_forward(model, a1, in1.data(), nullptr, model.random_fixed(), {nullptr, mid.data()});
  model_forward(model, at0, in2.data(), nullptr, model.random_fixed(), {mid.data(), nullptr, 0});
  std::vector<double> logits0(at0.logits, at0.logits + int64_t(T2) * spec.V);
  model_forward(model, atT1, in2.data(), nullptr, model.random_fixed(), {mid.data(), nullptr, T1});
  CHECK(max_diff(atT1.logits, T2, logits0.data(), T2, 0, B, spec.V) > 1e-6);
}
