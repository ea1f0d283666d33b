// Causality of the whole model: changing the token at position p changes no
// logit before p, for every attention kind and option (support/attention_variants.h;
// a leak from the future would make training losses look far better than they are).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "model/model.h"
#include "model/model_forward.h"
#include "support/attention_variants.h"
#include "support/tiny_model.h"

using namespace rfa;

TEST_CASE("model: logits before a changed token are unchanged (causal), later ones change") {
  for (const test::AttentionVariant& v : test::attention_variants()) {
    INFO("variant ", std::string(v.name));
    // chunk 5: the change sits inside the second chunk
    const Config base = test::tiny_config(AttentionKind::softmax, {.vocab = 13, .context = 12, .chunk_size = 5, .init_std = 0.3});
    ModelSpec spec = test::tiny_spec(test::with_variant(base, v));
    Model<float> model(spec);
    model_init(model, 9);
    const int B = 2, T = 12, p = 7;
    Activations<float> acts(spec, B, T);
    std::vector<int32_t> inputs(B * T);
    for (int i = 0; i < B * T; ++i) inputs[i] = (i * 5 + 3) % 13;
    model_forward(model, acts, inputs.data(), nullptr, model.random_fixed());
    std::vector<float> before(acts.logits, acts.logits + B * T * 13);
    inputs[T + p] = (inputs[T + p] + 1) % 13;  // row 1 only
    model_forward(model, acts, inputs.data(), nullptr, model.random_fixed());
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) {
        bool same = std::equal(before.begin() + (b * T + t) * 13, before.begin() + (b * T + t + 1) * 13,
                               acts.logits + (b * T + t) * 13);
        CAPTURE(b);
        CAPTURE(t);
        if (b == 0 || t < p) CHECK(same);
        else CHECK(!same);
      }
  }
}
