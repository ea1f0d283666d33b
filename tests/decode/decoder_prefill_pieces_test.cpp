// Decoder::prefill_pieces (rfa serve's prefill tick: several rows' prompt pieces in one pass)
// gives each row the state and logits prefill_row gives it alone, bit for bit, for every
// attention variant; a pass that cannot run throws before any row changes.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "decode/decoder.h"
#include "support/attention_variants.h"
#include "support/conv_taps.h"
#include "support/decoder_rows_model.h"

using namespace rfa;

namespace {

constexpr int kV = test::kRowsV, kSegment = 6, kMaxPositions = 40;

DecoderOptions options(int prefill_rows) {
  DecoderOptions o;
  o.batch = 4;
  o.prefill_rows = prefill_rows;
  o.max_segment = kSegment;
  o.max_positions = kMaxPositions;
  return o;
}

struct Piece {
  int row;
  std::vector<int32_t> tokens;
};

// Every row's position, logits and state the same, bit for bit.
void check_same(const Decoder<float>& a, const Decoder<float>& b) {
  for (int r = 0; r < a.batch(); ++r) {
    CAPTURE(r);
    REQUIRE(a.position(r) == b.position(r));
    REQUIRE((a.row_logits(r) == nullptr) == (b.row_logits(r) == nullptr));
    if (a.row_logits(r)) CHECK(std::memcmp(a.row_logits(r), b.row_logits(r), sizeof(float) * kV) == 0);
    const size_t n = static_cast<size_t>(a.row_state_size(a.position(r)));
    std::vector<float> sa(n), sb(n);
    a.row_state_save(r, sa.data());
    b.row_state_save(r, sb.data());
    CHECK((n == 0 || std::memcmp(sa.data(), sb.data(), sizeof(float) * n) == 0));  // (an empty KV cache: none)
  }
}

// The pieces in one pass on `together`, one prefill_row each on `alone`.
void prefill_both(Decoder<float>& together, Decoder<float>& alone, const std::vector<Piece>& pieces) {
  std::vector<Decoder<float>::RowTokens> rows;
  for (const Piece& p : pieces) {
    rows.push_back({p.row, p.tokens.data(), static_cast<int>(p.tokens.size())});
    alone.prefill_row(p.row, p.tokens.data(), static_cast<int>(p.tokens.size()));
  }
  together.prefill_pieces(rows);
  check_same(together, alone);
}

void check_variant(const test::AttentionVariant& v) {
  Model<float> model(test::rows_model_spec(v));
  model_init(model, 5);
  test::conv_taps_randomize(model, 5, 0.2);
  Decoder<float> together(model, options(2)), alone(model, options(1));
  REQUIRE(together.prefill_batch_invariant());
  // Three rows' first pieces (12 tokens: the whole 2 x 6); row 1 stays empty.
  prefill_both(together, alone, {{2, test::rows_tokens(1, 5)}, {0, test::rows_tokens(2, 6)}, {3, test::rows_tokens(3, 1)}});
  // Rows continue from their states and positions, row 1 starts; rows in any order.
  prefill_both(together, alone, {{1, test::rows_tokens(4, 3)}, {0, test::rows_tokens(5, 4)}, {2, test::rows_tokens(6, 5)}});
  // One piece alone, then a step of every row: the states went on the same.
  prefill_both(together, alone, {{3, test::rows_tokens(7, 6)}});
  const std::vector<int> all{0, 1, 2, 3};
  const std::vector<int32_t> next = test::rows_tokens(8, 4);
  const float* a = together.step_rows(all.data(), 4, next.data());
  const float* b = alone.step_rows(all.data(), 4, next.data());
  CHECK(std::memcmp(a, b, sizeof(float) * 4 * kV) == 0);
  check_same(together, alone);
}

}  // namespace

TEST_CASE("decoder prefill_pieces: each row's state and logits are prefill_row's, bit for bit, every variant") {
  for (const test::AttentionVariant& v : test::attention_variants()) {
    INFO("variant: ", std::string(v.name));
    check_variant(v);
  }
}

TEST_CASE("decoder prefill_pieces: a pass that cannot run names why and changes no row") {
  Model<float> model(test::rows_model_spec(test::attention_variants()[0]));  // softmax: a position limit
  model_init(model, 6);
  Decoder<float> dec(model, options(2)), untouched(model, options(2));
  const std::vector<int32_t> five = test::rows_tokens(1, 5), seven = test::rows_tokens(2, 7);
  std::vector<int32_t> bad = five;
  bad[3] = kV;
  using Rows = std::vector<Decoder<float>::RowTokens>;
  auto refused = [&](const Rows& rows, const std::string& why) {
    CAPTURE(why);
    CHECK_THROWS_WITH_AS(dec.prefill_pieces(rows), doctest::Contains(why.c_str()), Error);
    check_same(dec, untouched);
  };
  refused({{0, five.data(), 5}, {1, five.data(), 5}, {2, five.data(), 5}}, "at most 12 (prefill_rows 2 x max_segment 6)");
  refused({{0, five.data(), 5}, {0, five.data(), 2}}, "row 0 listed twice");
  refused({{0, five.data(), 5}, {1, seven.data(), 7}}, "allowed 1..6 (max_segment)");
  refused({{1, five.data(), 5}, {0, bad.data(), 5}}, "token id 17 at index 3");
  refused({{4, five.data(), 5}}, "row 4 outside the batch of 4");
  refused({}, "allowed 1..4");
  // A row past its positions: fill row 2 to 38 of 40, then 3 more are refused with the others.
  for (int i = 0; i < 6; ++i) {
    dec.prefill_row(2, five.data(), 5);
    untouched.prefill_row(2, five.data(), 5);
  }
  dec.prefill_row(2, five.data(), 5);
  untouched.prefill_row(2, five.data(), 5);
  dec.prefill_row(2, five.data(), 3);
  untouched.prefill_row(2, five.data(), 3);
  refused({{0, five.data(), 5}, {2, five.data(), 3}}, "exceeds its max_positions 40");
}
