// DecoderOptions::release_model_matrices: a decoder that gives the model's pages under the matrices
// it packed back to the kernel decodes the same bits as one that keeps them (every attention kind
// and option: nothing it runs reads a released matrix), the pages are really given back (they read
// zero where the arena is a mapping), and whatever would read the matrices afterwards refuses.
#include <doctest/doctest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/rng.h"
#include "decode/decoder.h"
#include "decode/decoder_state_io.h"
#include "model/activations.h"
#include "model/model.h"
#include "kernels/bf16.h"
#include "model/model_forward.h"
#include "support/attention_variants.h"
#include "support/conv_taps.h"
#include "support/skip.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

constexpr int kRows = 2, kPrompt = 7, kSteps = 5, kContext = kPrompt + kSteps;

// C 128: the arena (weights and gradients, about 3.5 MB) is a mapping, and each matrix spans whole pages.
Config wide_config(const test::AttentionVariant& v, bool tied) {
  Config c = test::tiny_config(AttentionKind::rfa_gate, {.vocab = 300, .context = kContext, .d_model = 128,
                                                          .n_heads = 4, .num_features = 8, .chunk_size = 4,
                                                          .init_std = 0.1, .tied = tied});
  v.apply(c);
  return c;
}

DecoderOptions options(bool release, Precision precision = Precision::fp32) {
  DecoderOptions o;
  o.precision = precision;
  o.batch = kRows;
  o.max_segment = 4;  // the prompt in two pieces
  o.max_positions = kContext;
  o.release_model_matrices = release;
  return o;
}

// Every logit of a prompt prefilled in pieces, then kSteps steps (both rows), and of row 1 prefilled alone.
std::vector<float> decode_all(Decoder<float>& dec) {
  CounterRng rng(5);
  std::vector<int32_t> tokens(size_t(kRows) * kContext);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng.below(uint64_t(dec.vocab())));
  std::vector<float> out;
  const int V = dec.vocab();
  auto keep = [&](const float* logits, int64_t n) { out.insert(out.end(), logits, logits + n * V); };
  keep(dec.prefill_all(tokens.data(), kContext - kSteps), kRows);
  std::vector<int32_t> step(kRows);
  for (int t = kContext - kSteps; t < kContext; ++t) {
    for (int b = 0; b < kRows; ++b) step[size_t(b)] = tokens[size_t(b) * kContext + size_t(t)];
    keep(dec.step(step.data()), kRows);
  }
  dec.reset_row(1);
  keep(dec.prefill_row(1, tokens.data(), 3), 3);
  return out;
}

}  // namespace

TEST_CASE("decoder: a decoder that releases the model's matrices decodes the same bits, for every attention kind") {
  for (const test::AttentionVariant& v : test::attention_variants())
    for (bool tied : {true, false}) {
      INFO(v.name, tied ? ", tied LM head" : ", own LM head");
      const ModelSpec spec = test::tiny_spec(wide_config(v, tied));
      Model<float> kept(spec), released(spec);
      for (Model<float>* m : {&kept, &released}) {
        model_init(*m, 3);
        test::conv_taps_randomize(*m, 3);
      }
      Decoder<float> keeping(kept, options(false));
      Decoder<float> releasing(released, options(true));
      CHECK_FALSE(kept.matrices_released());
      CHECK(released.matrices_released());
      const std::vector<float> want = decode_all(keeping), got = decode_all(releasing);
      REQUIRE(got.size() == want.size());
      CHECK(std::memcmp(got.data(), want.data(), sizeof(float) * want.size()) == 0);

      // The middle of a matrix reads zero: its pages went back (not under AddressSanitizer, whose
      // arenas are heap blocks that keep them). A tied embedding's too (its rows come from the LM
      // head's packed copy); an untied one, which nothing packs, stays.
      const int64_t mid = int64_t(spec.C) * spec.C / 2;
      CHECK(kept.w.layers[1].wo[mid] != 0.0f);
#if !defined(__SANITIZE_ADDRESS__)
      CHECK(released.w.layers[1].wo[mid] == 0.0f);
      CHECK(released.w.layers[0].w13[mid] == 0.0f);
      CHECK(released.w.lm_head[mid] == 0.0f);
#endif
      if (!tied)
        CHECK(std::memcmp(released.w.tok_embedding, kept.w.tok_embedding, sizeof(float) * spec.V * spec.C) == 0);
    }
}

TEST_CASE("decoder: a bf16 decoder that releases the float matrices decodes the same bits") {
  if (test::skip_if(!bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)"))
    return;
  for (const test::AttentionVariant& v : test::attention_variants())
    for (bool tied : {true, false}) {
      INFO(v.name, tied ? ", tied LM head" : ", own LM head");
      const ModelSpec spec = test::tiny_spec(wide_config(v, tied));
      Model<float> kept(spec, Precision::bf16), released(spec, Precision::bf16);
      for (Model<float>* m : {&kept, &released}) {
        model_init(*m, 3);
        test::conv_taps_randomize(*m, 3);
        m->bf16_refresh();
      }
      Decoder<float> keeping(kept, options(false, Precision::bf16));
      Decoder<float> releasing(released, options(true, Precision::bf16));
      CHECK(released.matrices_released());
      const std::vector<float> want = decode_all(keeping), got = decode_all(releasing);
      REQUIRE(got.size() == want.size());
      CHECK(std::memcmp(got.data(), want.data(), sizeof(float) * want.size()) == 0);
      const int64_t mid = int64_t(spec.C) * spec.C / 2;
#if !defined(__SANITIZE_ADDRESS__)
      CHECK(released.w.layers[1].wq[mid] == 0.0f);
      if (!tied) CHECK(released.w.lm_head[mid] == 0.0f);
#endif
      CHECK(std::memcmp(released.w.tok_embedding, kept.w.tok_embedding, sizeof(float) * spec.V * spec.C) == 0);
    }
}

TEST_CASE("decoder: after a release, nothing reads the model's matrices") {
  const ModelSpec spec = test::tiny_spec(wide_config(test::attention_variants().front(), true));
  Model<float> model(spec);
  model_init(model, 3);
  const std::string before = model_checksum(model);
  Decoder<float> dec(model, options(true));
  CHECK_THROWS_AS(Decoder<float>(model, options(false)), std::logic_error);  // it would pack zeros
  CHECK_THROWS_AS(model_checksum(model), std::logic_error);
  Activations<float> acts(spec, 1, 4);
  const std::vector<int32_t> tokens(4, 1);
  CHECK_THROWS_AS(model_forward(model, acts, tokens.data(), nullptr, model.random_fixed()), std::logic_error);
  CHECK_FALSE(before.empty());

  // A decoder without steps (whose prefill reads the matrices) releases nothing.
  Model<float> other(spec);
  model_init(other, 3);
  DecoderOptions prefill_only = options(true);
  prefill_only.steps = false;
  Decoder<float> prefill(other, prefill_only);
  CHECK_FALSE(other.matrices_released());
  CHECK(model_checksum(other) == before);
}
