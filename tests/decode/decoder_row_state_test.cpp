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
#include "support/decoder_rows_model.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

constexpr int kV = test::kRowsV, kMaxPositions = 32;

DecoderOptions options(int batch) {
  DecoderOptions o;
  o.batch = batch;
  o.prefill_rows = 1;
  o.max_segment = 4;
  o.max_positions = kMaxPositions;
  return o;
}

void check_variant(const test::AttentionVariant& v) {
  Model<float> model(test::rows_model_spec(v));
  model_init(model, 5);
  Decoder<float> dec(model, options(3)), other(model, options(2));
  const std::vector<int32_t> prompt = test::rows_tokens(1, 7);
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
  const std::vector<int32_t> junk = test::rows_tokens(2, 5);
  dec.prefill_row(2, junk.data(), 4);
  dec.row_state_restore(2, p, state.data(), dec.row_logits(1));
  other.row_state_restore(0, p, state.data(), dec.row_logits(1));
  CHECK(dec.position(2) == p);
  CHECK(other.position(0) == p);
  for (int s = 0; s < 6; ++s) {
    const std::vector<int32_t> t = test::rows_tokens(10 + uint64_t(s), 1);
    const int rows[] = {1, 2};
    const int32_t two[] = {t[0], t[0]};
    const float* a = dec.step_rows(rows, 2, two);
    const int row0[] = {0};
    const float* b = other.step_rows(row0, 1, t.data());
    for (int i = 0; i < kV; ++i) {
      INFO("step ", s, " logit ", i);
      CHECK(a[i] == a[kV + i]);  // bit for bit: the same state, the same position, the same kernels
      // Another batch, the same bits: the step is batch-invariant (kernels/step_gemm.h). With
      // oneDNN's products this needed a tolerance of 5e-5 (rfa_gate, arccos map).
      CHECK(a[i] == b[i]);
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
  Model<float> model(test::rows_model_spec(test::attention_variants()[0]));  // softmax
  model_init(model, 5);
  Decoder<float> dec(model, options(2));
  const std::vector<int32_t> prompt = test::rows_tokens(1, 3);
  dec.prefill_row(0, prompt.data(), 3);
  std::vector<float> state(static_cast<size_t>(dec.row_state_size(kMaxPositions + 1)));
  CHECK_THROWS_WITH_AS(dec.row_state_restore(0, kMaxPositions + 1, state.data(), dec.row_logits(0)),
                       doctest::Contains("does not fit the 32 positions"), Error);
  CHECK(dec.position(0) == 3);
}
