// A row's compact state (Decoder::row_state_save / row_state_restore: what `rfa serve`'s
// state cache keeps) restores the row exactly: restored into another row, or into another
// decoder, it continues with the logits the original row gives, for every variant; a KV
// cache keeps only its filled slots.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "decode/decoder.h"
#include "support/attention_variants.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

constexpr int kV = 17, kMaxPositions = 32;

ModelSpec spec_of(const test::AttentionVariant& v) {
  Config c = test::tiny_config(AttentionKind::rfa_gate,
                               {.vocab = kV, .context = 16, .n_layers = 2, .num_features = 5, .chunk_size = 4,
                                .init_std = 0.3});
  c.attention.gate_bias_init = 0.5;
  v.apply(c);
  return test::tiny_spec(c);
}

DecoderOptions options(int batch) {
  DecoderOptions o;
  o.batch = batch;
  o.prefill_rows = 1;
  o.max_segment = 4;
  o.max_positions = kMaxPositions;
  return o;
}

std::vector<int32_t> tokens_of(uint64_t seed, int n) {
  CounterRng rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng.below(kV));
  return t;
}

void check_variant(const test::AttentionVariant& v) {
  Model<float> model(spec_of(v));
  model_init(model, 5);
  Decoder<float> dec(model, options(3)), other(model, options(2));
  const std::vector<int32_t> prompt = tokens_of(1, 7);
  dec.prefill_row(1, prompt.data(), 4);
  dec.prefill_row(1, prompt.data() + 4, 3);
  const int64_t p = dec.position(1);
  REQUIRE(p == 7);
  std::vector<float> state(static_cast<size_t>(dec.row_state_size(p)));
  dec.row_state_save(1, state.data());
  if (v.grows) {  // a KV cache: only the 7 filled slots of each (H, slot, Dh) tensor
    CHECK(dec.row_state_size(p) < dec.row_state_size(kMaxPositions));
    // Linear in the filled slots (a fixed part beside them: a recurrent layer's state, a convolution's history).
    CHECK(dec.row_state_size(2 * p) - dec.row_state_size(p) == dec.row_state_size(p) - dec.row_state_size(0));
    CHECK(dec.row_state_size(2 * p) > dec.row_state_size(p));
  } else {  // a recurrent state: whole at any position
    CHECK(dec.row_state_size(p) == dec.row_state_size(kMaxPositions));
  }
  // Row 2 of the same decoder (after other text) and row 0 of another take the state.
  const std::vector<int32_t> junk = tokens_of(2, 5);
  dec.prefill_row(2, junk.data(), 4);
  dec.row_state_restore(2, p, state.data(), dec.row_logits(1));
  other.row_state_restore(0, p, state.data(), dec.row_logits(1));
  CHECK(dec.position(2) == p);
  CHECK(other.position(0) == p);
  for (int s = 0; s < 6; ++s) {
    const std::vector<int32_t> t = tokens_of(10 + uint64_t(s), 1);
    const int rows[] = {1, 2};
    const int32_t two[] = {t[0], t[0]};
    const float* a = dec.step_rows(rows, 2, two);
    const int row0[] = {0};
    const float* b = other.step_rows(row0, 1, t.data());
    for (int i = 0; i < kV; ++i) {
      INFO("step ", s, " logit ", i);
      CHECK(a[i] == a[kV + i]);  // bit for bit: the same state, the same position, the same kernels
      CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-5));  // another batch: other blocking of the products
    }
  }
}

}  // namespace

TEST_CASE("decoder row state: a row's part in use restores it exactly, every variant") {
  for (const test::AttentionVariant& v : test::attention_variants()) {
    INFO("variant: ", std::string(v.name));
    check_variant(v);
  }
}

TEST_CASE("decoder row state: a position past a linear cache is refused; the row is untouched") {
  Model<float> model(spec_of(test::attention_variants()[0]));  // softmax
  model_init(model, 5);
  Decoder<float> dec(model, options(2));
  const std::vector<int32_t> prompt = tokens_of(1, 3);
  dec.prefill_row(0, prompt.data(), 3);
  std::vector<float> state(static_cast<size_t>(dec.row_state_size(kMaxPositions + 1)));
  CHECK_THROWS_WITH_AS(dec.row_state_restore(0, kMaxPositions + 1, state.data(), dec.row_logits(0)),
                       doctest::Contains("does not fit the 32 positions"), Error);
  CHECK(dec.position(0) == 3);
}
