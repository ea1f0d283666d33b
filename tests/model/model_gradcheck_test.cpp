// Whole-model gradient check in double: every parameter tensor's analytic
// gradient against central differences of the mean cross-entropy, on a tiny
// model (V=11, C=8, H=2, L=2, T=5, B=2) for each attention kind.
#include <doctest/doctest.h>

#include <vector>

#include "model/model.h"
#include "model/model_forward.h"
#include "support/gradcheck.h"
#include "support/model_gradcheck.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

ModelSpec tiny_spec(AttentionKind kind, FeatureMapKind map, bool tied, PositionKind positions,
                    GateKind gate = GateKind::scalar, TimeDiscountKind discount = TimeDiscountKind::none,
                    int short_conv = 0) {
  // init_std 0.5: large enough that every path carries a visible gradient;
  // chunk 2: T = 5 spans three chunks, the last one partial.
  Config c = test::tiny_config(kind, {.vocab = 11, .context = 5, .d_model = 8, .num_features = 3, .chunk_size = 2,
                                      .init_std = 0.5, .tied = tied});
  c.model.ffn_hidden = 12;
  c.attention.feature_map = map;
  c.attention.positions = positions;
  c.attention.denominator_floor = 1e-6;
  c.attention.gate_bias_init = 0.5;
  c.attention.sigma_init = 1.3;
  c.attention.gate = gate;
  c.attention.time_discount = discount;
  c.attention.short_conv = short_conv;
  return test::tiny_spec(c);
}

void check_model_gradients(const ModelSpec& spec) {
  const int B = 2, T = 5;
  Model<double> model(spec);
  model_init(model, 7);
  // Nudge norms, sigma and the short convolution (the identity at init) away from their
  // constant init so their gradients are generic.
  std::vector<double> noise = test::random_vector<double>(static_cast<size_t>(model.param_size()), 3, 0.1);
  for (const ParamEntry& e : model.table.entries())
    if (e.shape.size() == 1 || e.name.find("sigma") != std::string::npos || e.name.find("attn.conv_") != std::string::npos)
      for (int64_t i = 0; i < e.numel; ++i) model.params()[e.offset + i] += noise[static_cast<size_t>(e.offset + i)];
  Activations<double> acts(spec, B, T);
  std::vector<int32_t> inputs = {1, 4, 9, 0, 3, 10, 2, 2, 7, 5};
  std::vector<int32_t> targets = {4, 9, 0, 3, 6, -1, 2, 7, 5, 8};  // one ignored target
  const double* random = model.random_fixed();
  model.zero_grad();
  double loss = model_forward(model, acts, inputs.data(), targets.data(), random);
  CHECK(loss > 0);
  model_backward(model, acts, inputs.data(), targets.data(), random, 1.0);
  test::check_model_gradient(model, [&] { return model_forward(model, acts, inputs.data(), targets.data(), random); });
}

}  // namespace

TEST_CASE("model gradcheck: softmax with rope, tied embeddings") {
  check_model_gradients(tiny_spec(AttentionKind::softmax, FeatureMapKind::gaussian, true, PositionKind::automatic));
}

TEST_CASE("model gradcheck: softmax without positions, untied head") {
  check_model_gradients(tiny_spec(AttentionKind::softmax, FeatureMapKind::gaussian, false, PositionKind::none));
}

TEST_CASE("model gradcheck: rfa gaussian") {
  check_model_gradients(tiny_spec(AttentionKind::rfa, FeatureMapKind::gaussian, true, PositionKind::automatic));
}

TEST_CASE("model gradcheck: rfa_gate gaussian with rope") {
  check_model_gradients(tiny_spec(AttentionKind::rfa_gate, FeatureMapKind::gaussian, true, PositionKind::rope));
}

TEST_CASE("model gradcheck: rfa_gate arccos") {
  check_model_gradients(tiny_spec(AttentionKind::rfa_gate, FeatureMapKind::arccos, false, PositionKind::automatic));
}

TEST_CASE("model gradcheck: rfa_gate with the feature gate and the time discount") {
  check_model_gradients(tiny_spec(AttentionKind::rfa_gate, FeatureMapKind::gaussian, true, PositionKind::automatic,
                                  GateKind::feature, TimeDiscountKind::log));
}

TEST_CASE("model gradcheck: the short convolution on q, k, v, on rfa_gate and on softmax with rope") {
  for (int K : {2, 4}) {  // K = 4 reaches back past the chunk of 2
    CAPTURE(K);
    check_model_gradients(tiny_spec(AttentionKind::rfa_gate, FeatureMapKind::gaussian, true,
                                    PositionKind::automatic, GateKind::scalar, TimeDiscountKind::none, K));
    check_model_gradients(tiny_spec(AttentionKind::softmax, FeatureMapKind::gaussian, true, PositionKind::rope,
                                    GateKind::scalar, TimeDiscountKind::none, K));
  }
}

TEST_CASE("model gradcheck: gradient accumulates and scales with loss_scale") {
  ModelSpec spec = tiny_spec(AttentionKind::softmax, FeatureMapKind::gaussian, true, PositionKind::automatic);
  Model<double> model(spec);
  model_init(model, 7);
  Activations<double> acts(spec, 2, 5);
  std::vector<int32_t> inputs = {1, 4, 9, 0, 3, 10, 2, 2, 7, 5}, targets = {4, 9, 0, 3, 6, 1, 2, 7, 5, 8};
  model.zero_grad();
  model_forward(model, acts, inputs.data(), targets.data(), nullptr);
  model_backward(model, acts, inputs.data(), targets.data(), nullptr, 1.0);
  std::vector<double> once(model.grads(), model.grads() + model.param_size());
  model.zero_grad();
  for (int micro = 0; micro < 2; ++micro) {
    model_forward(model, acts, inputs.data(), targets.data(), nullptr);
    model_backward(model, acts, inputs.data(), targets.data(), nullptr, 0.5);
  }
  test::check_close("two half-scaled backwards", model.grads(), once.data(), once.size(), 1e-12, 1e-15);
}

TEST_CASE("model: token outside the vocabulary is a user error naming the id") {
  ModelSpec spec = tiny_spec(AttentionKind::softmax, FeatureMapKind::gaussian, true, PositionKind::automatic);
  Model<double> model(spec);
  model_init(model, 7);
  Activations<double> acts(spec, 1, 2);
  std::vector<int32_t> inputs = {3, 11}, targets = {1, 2};
  CHECK_THROWS_WITH_AS(model_forward(model, acts, inputs.data(), targets.data(), nullptr),
                       doctest::Contains("token id 11"), Error);
}
