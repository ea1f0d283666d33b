// model_backward's GradWrite::overwrite (a step's first micro-batch, no
// zero_grad pass) must give exactly zero_grad + accumulate, for every
// parameter tensor, whatever the gradients held before (here NaN), and leave
// the zero padding between tensors zero: for every attention kind and option
// (support/attention_variants.h), tied and untied.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/model_forward.h"
#include "support/attention_variants.h"
#include "support/gradcheck.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

void check_overwrite_equals_accumulate(const test::AttentionVariant& v, bool tied) {
  const int B = 2, T = 8;
  ModelSpec spec = test::tiny_spec(
      test::with_variant(test::tiny_config(AttentionKind::softmax, {.vocab = 13, .context = T, .tied = tied}), v));
  Model<float> model(spec);
  model_init(model, 3);
  Activations<float> acts(spec, B, T);
  std::vector<int32_t> inputs(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) {
    inputs[static_cast<size_t>(i)] = (i * 5 + 1) % 13;
    targets[static_cast<size_t>(i)] = i == 3 ? -1 : (i * 7 + 2) % 13;  // one ignored target
  }
  const float* random = model.random_fixed();
  model.zero_grad();
  model_forward(model, acts, inputs.data(), targets.data(), random);
  model_backward(model, acts, inputs.data(), targets.data(), random, 0.5, GradWrite::accumulate);
  std::vector<float> expect(model.grads(), model.grads() + model.param_size());

  // Garbage in every tensor; the alignment padding between tensors is zero from
  // the arena and no backward writes it, so it stays zero (checked below).
  for (const ParamEntry& e : model.table.entries())
    std::fill(model.grads() + e.offset, model.grads() + e.offset + e.numel, std::numeric_limits<float>::quiet_NaN());
  model_forward(model, acts, inputs.data(), targets.data(), random);
  model_backward(model, acts, inputs.data(), targets.data(), random, 0.5, GradWrite::overwrite);
  for (const ParamEntry& e : model.table.entries()) {
    INFO("tensor ", e.name);
    int64_t differ = 0;
    for (int64_t i = 0; i < e.numel; ++i) {
      size_t j = static_cast<size_t>(e.offset + i);
      differ += !(model.grads()[j] == expect[j]);  // NaN left behind counts too
    }
    CHECK(differ == 0);
  }
  CHECK(std::vector<float>(model.grads(), model.grads() + model.param_size()) == expect);  // padding too
  // A second micro-batch accumulates onto the overwritten gradients (to rounding:
  // a gemm with beta 1 may fold C into its sums in another order).
  model_forward(model, acts, inputs.data(), targets.data(), random);
  model_backward(model, acts, inputs.data(), targets.data(), random, 0.5, GradWrite::accumulate);
  for (size_t j = 0; j < expect.size(); ++j) expect[j] += expect[j];
  test::check_close("two micro-batches", model.grads(), expect.data(), expect.size(), 1e-5, 1e-7);
}

}  // namespace

TEST_CASE("model grad write: overwrite equals zero_grad + accumulate for every tensor, every variant") {
  for (const test::AttentionVariant& v : test::attention_variants())
    for (bool tied : {true, false}) {
      INFO("variant ", std::string(v.name), " tied ", tied);
      check_overwrite_equals_accumulate(v, tied);
    }
}
