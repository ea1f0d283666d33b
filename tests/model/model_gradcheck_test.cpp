// Whole-model gradient check in double: every parameter tensor's analytic
// gradient against central differences of the mean cross-entropy, on a tiny
// model (V=11, C=8, H=2, L=2, T=5, B=2) for every attention kind and option
// (support/attention_variants.h).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model/model.h"
#include "model/model_forward.h"
#include "support/attention_variants.h"
#include "support/gradcheck.h"
#include "support/model_gradcheck.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

// A tiny model with a variant's attention (support/attention_variants.h); short_conv > 0
// sets that many taps on top of the variant.
ModelSpec variant_spec(const test::AttentionVariant& v, bool tied, int short_conv = 0) {
  // init_std 0.5: large enough that every path carries a visible gradient;
  // chunk 2: T = 5 spans three chunks, the last one partial.
  Config c = test::tiny_config(AttentionKind::softmax, {.vocab = 11, .context = 5, .d_model = 8, .num_features = 3,
                                                         .chunk_size = 2, .init_std = 0.5, .tied = tied});
  c.model.ffn_hidden = 12;
  c.attention.denominator_floor = 1e-6;
  c.attention.gate_bias_init = 0.5;
  c.attention.sigma_init = 1.3;
  Config cv = test::with_variant(c, v);
  if (short_conv > 0) cv.attention.short_conv = short_conv;
  return test::tiny_spec(cv);
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

TEST_CASE("model gradcheck: every tensor, every attention kind and option (tied and untied in turn)") {
  const std::vector<test::AttentionVariant>& variants = test::attention_variants();
  for (size_t i = 0; i < variants.size(); ++i) {
    const bool tied = i % 2 == 0;
    INFO("variant ", std::string(variants[i].name), ", tied ", tied);
    check_model_gradients(variant_spec(variants[i], tied));
  }
}

TEST_CASE("model gradcheck: the short convolution on q, k, v, on rfa_gate and on softmax with rope") {
  for (int K : {2, 4}) {  // K = 4 reaches back past the chunk of 2
    CAPTURE(K);
    check_model_gradients(variant_spec(test::attention_variant("rfa_gate gaussian"), true, K));
    check_model_gradients(variant_spec(test::attention_variant("softmax (rope)"), true, K));
  }
}

TEST_CASE("model gradcheck: gradient accumulates and scales with loss_scale") {
  ModelSpec spec = variant_spec(test::attention_variant("softmax (rope)"), true);
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
  ModelSpec spec = variant_spec(test::attention_variant("softmax (rope)"), true);
  Model<double> model(spec);
  model_init(model, 7);
  Activations<double> acts(spec, 1, 2);
  std::vector<int32_t> inputs = {3, 11}, targets = {1, 2};
  CHECK_THROWS_WITH_AS(model_forward(model, acts, inputs.data(), targets.data(), nullptr),
                       doctest::Contains("token id 11"), Error);
}
