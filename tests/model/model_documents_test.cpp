// Document boundaries (data.document_boundaries reset, ModelCarry::segment_start) through the
// whole model, for every attention variant (tests/support/attention_variants.h):
//   - a packed row of documents gives the per-token losses and the parameter gradients of its
//     documents run one by one, each alone from an empty state at position 0 (double);
//   - editing one document changes no logit of another in the same row (float, exactly);
//   - the gradient with boundaries against central differences (double);
//   - a boundary at a row's first token discards the carried state (stateful training).
#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "model/model.h"
#include "model/model_forward.h"
#include "support/attention_variants.h"
#include "support/conv_taps.h"
#include "support/gradcheck.h"
#include "support/model_gradcheck.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

// The tiny double model of the gradient checks (V=11, C=8, H=2, L=2, F=3) at context T, chunks
// of 4 (so boundaries fall both inside a chunk and on a chunk's first row).
ModelSpec documents_spec(const test::AttentionVariant& v, int T) {
  Config c = test::tiny_config(AttentionKind::rfa_gate, {.vocab = 11, .context = T, .d_model = 8, .num_features = 3,
                                                         .chunk_size = 4, .init_std = 0.5});
  c.model.ffn_hidden = 12;
  c.attention.denominator_floor = 1e-6;
  c.attention.gate_bias_init = 0.5;
  c.attention.sigma_init = 1.3;
  return test::tiny_spec(test::with_variant(c, v));
}

template <typename T>
void perturb_norms_and_sigma(Model<T>& model) {
  std::vector<T> noise = test::random_vector<T>(static_cast<size_t>(model.param_size()), 3, 0.1);
  for (const ParamEntry& e : model.table.entries())
    if (e.shape.size() == 1 || e.name.find("sigma") != std::string::npos)
      for (int64_t i = 0; i < e.numel; ++i) model.params()[e.offset + i] += noise[static_cast<size_t>(e.offset + i)];
}

// Rows of documents: each row's document lengths (summing to T); a row whose first length is
// negative begins inside a document that started before it (no flag at t = 0).
std::vector<uint8_t> starts_of(const std::vector<std::vector<int>>& rows, int T) {
  std::vector<uint8_t> starts(rows.size() * size_t(T), 0);
  for (size_t b = 0; b < rows.size(); ++b) {
    int t = 0;
    for (int len : rows[b]) {
      if (len > 0) starts[b * T + t] = 1;
      t += len < 0 ? -len : len;
    }
    REQUIRE(t == T);
  }
  return starts;
}

}  // namespace

TEST_CASE("model documents: a packed row equals its documents run separately (losses and gradients)") {
  const int T = 13;
  // Row 0: documents of 5, 3, 4 and 1 tokens (boundaries inside chunk 1, on chunk 2's first row
  // and a one-token document); row 1: 2 and 11.
  const std::vector<std::vector<int>> rows = {{5, 3, 4, 1}, {2, 11}};
  const int B = static_cast<int>(rows.size());
  const std::vector<uint8_t> starts = starts_of(rows, T);
  std::vector<int32_t> inputs(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) inputs[i] = (i * 7 + 3) % 11, targets[i] = (i * 5 + 1) % 11;
  targets[4] = -1;  // an ignored target
  for (const test::AttentionVariant& v : test::attention_variants()) {
    CAPTURE(v.name);
    const ModelSpec spec = documents_spec(v, T);
    Model<double> model(spec);
    model_init(model, 7);
    test::conv_taps_randomize(model, 7);  // the short convolution's variants: not the identity
    perturb_norms_and_sigma(model);
    const double* random = model.random_fixed();
    Activations<double> packed(spec, B, T);
    ModelCarry<double> docs;
    docs.segment_start = starts.data();
    model_forward(model, packed, inputs.data(), targets.data(), random, docs);
    model_backward(model, packed, inputs.data(), targets.data(), random, 1.0, GradWrite::overwrite);
    const std::vector<double> grads(model.grads(), model.grads() + model.param_size());
    const int64_t count = std::count_if(targets.begin(), targets.end(), [](int32_t t) { return t >= 0; });

    // Each document alone (B = 1, its own length): the same per-token losses; its backward scaled
    // by its share of the packed mean, accumulated over the documents.
    bool first = true;
    for (int b = 0; b < B; ++b) {
      int t0 = 0;
      for (int len : rows[static_cast<size_t>(b)]) {
        CAPTURE(b);
        CAPTURE(t0);
        const int32_t* in = inputs.data() + b * T + t0;
        const int32_t* tg = targets.data() + b * T + t0;
        const int64_t n = std::count_if(tg, tg + len, [](int32_t t) { return t >= 0; });
        Activations<double> alone(spec, 1, len);
        model_forward(model, alone, in, tg, random);
        for (int t = 0; t < len; ++t)
          if (tg[t] >= 0) CHECK(alone.losses[t] == doctest::Approx(packed.losses[b * T + t0 + t]).epsilon(1e-10));
        model_backward(model, alone, in, tg, random, double(n) / double(count),
                       first ? GradWrite::overwrite : GradWrite::accumulate);
        first = false;
        t0 += len;
      }
    }
    for (const ParamEntry& e : model.table.entries()) {
      INFO("tensor ", e.name);
      test::check_close(e.name, model.grads() + e.offset, grads.data() + e.offset, static_cast<size_t>(e.numel),
                        1e-8, 1e-12);
    }
  }
}

TEST_CASE("model documents: editing one document changes no logit of another") {
  const int T = 16, V = 11;
  const std::vector<std::vector<int>> rows = {{6, 7, 3}};
  const std::vector<uint8_t> starts = starts_of(rows, T);
  for (const test::AttentionVariant& v : test::attention_variants()) {
    CAPTURE(v.name);
    Config c = test::tiny_config(AttentionKind::rfa_gate, {.vocab = V, .context = T, .chunk_size = 5, .init_std = 0.3});
    const ModelSpec spec = test::tiny_spec(test::with_variant(c, v));
    Model<float> model(spec);
    model_init(model, 9);
    test::conv_taps_randomize(model, 9);  // the short convolution's variants: not the identity
    Activations<float> acts(spec, 1, T);
    std::vector<int32_t> inputs(T);
    for (int t = 0; t < T; ++t) inputs[t] = (t * 5 + 3) % V;
    ModelCarry<float> docs;
    docs.segment_start = starts.data();
    model_forward(model, acts, inputs.data(), nullptr, model.random_fixed(), docs);
    const std::vector<float> before(acts.logits, acts.logits + T * V);
    for (int p : {1, 8}) {  // a token of document A (0..5), then of document B (6..12)
      CAPTURE(p);
      std::vector<int32_t> edited = inputs;
      edited[p] = (edited[p] + 4) % V;
      model_forward(model, acts, edited.data(), nullptr, model.random_fixed(), docs);
      const int doc_end = p < 6 ? 6 : 13;
      for (int t = 0; t < T; ++t) {
        CAPTURE(t);
        const bool same = std::equal(before.begin() + t * V, before.begin() + (t + 1) * V, acts.logits + t * V);
        if (t >= p && t < doc_end) CHECK(!same);  // its own document from the edit on
        else CHECK(same);                        // before it, and every other document: bit for bit
      }
    }
  }
}

TEST_CASE("model documents: gradient with document boundaries against finite differences (double)") {
  const int T = 9;
  // Row 0: documents of 3, 4 and 2 tokens; row 1 continues a document for 4 tokens, then one of 5.
  const std::vector<std::vector<int>> rows = {{3, 4, 2}, {-4, 5}};
  const int B = 2;
  const std::vector<uint8_t> starts = starts_of(rows, T);
  std::vector<int32_t> inputs(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) inputs[i] = (i * 7 + 2) % 11, targets[i] = (i * 3 + 5) % 11;
  targets[6] = -1;
  for (const test::AttentionVariant& v : test::attention_variants()) {
    CAPTURE(v.name);
    const ModelSpec spec = documents_spec(v, T);
    Model<double> model(spec);
    model_init(model, 7);
    test::conv_taps_randomize(model, 7);  // the short convolution's variants: not the identity
    perturb_norms_and_sigma(model);
    Activations<double> acts(spec, B, T);
    ModelCarry<double> docs;
    docs.segment_start = starts.data();
    const double* random = model.random_fixed();
    model.zero_grad();
    model_forward(model, acts, inputs.data(), targets.data(), random, docs);
    model_backward(model, acts, inputs.data(), targets.data(), random, 1.0);
    test::check_model_gradient(model,
                               [&] { return model_forward(model, acts, inputs.data(), targets.data(), random, docs); });
  }
}

TEST_CASE("model documents: a boundary at a row's first token discards the carried state") {
  const int T = 7, B = 2;
  for (const test::AttentionVariant& v : test::attention_variants_stateful()) {
    CAPTURE(v.name);
    const ModelSpec spec = documents_spec(v, T);
    Model<double> model(spec);
    model_init(model, 5);
    test::conv_taps_randomize(model, 5);  // the short convolution's variants: not the identity
    int64_t carry_size = 0;
    for (const AttentionSpec& a : spec.attn) carry_size += attention_carry_size(a, B);
    const std::vector<double> state = test::random_vector<double>(static_cast<size_t>(carry_size), 11, 0.5);
    std::vector<int32_t> inputs(B * T);
    for (int i = 0; i < B * T; ++i) inputs[i] = (i * 3 + 1) % 11;
    Activations<double> acts(spec, B, T);
    model_forward(model, acts, inputs.data(), nullptr, model.random_fixed());
    const std::vector<double> empty(acts.logits, acts.logits + B * T * 11);
    std::vector<uint8_t> starts(B * T, 0);
    starts[0] = starts[T] = 1;
    ModelCarry<double> carry;
    carry.in = state.data();
    carry.pos0 = 40;  // positions restart too (the time discount's t)
    carry.segment_start = starts.data();
    model_forward(model, acts, inputs.data(), nullptr, model.random_fixed(), carry);
    test::check_close("logits", acts.logits, empty.data(), empty.size(), 1e-12, 1e-14);
  }
}
