// The decoder's rows are independent: rows at different positions in one batched step give
// the logits separate single-row decoders give, for every attention variant, while rows join
// (reset, then a prompt prefilled in pieces while the others keep stepping), leave (idle),
// and one row is copied into another (row_save / row_restore) to continue two ways.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "core/rng.h"
#include "decode/decoder.h"
#include "support/conv_taps.h"
#include "support/attention_variants.h"
#include "support/decoder_rows_model.h"
#include "support/fork_factor.h"
#include "support/gradcheck.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

constexpr int kB = 4, kV = test::kRowsV, kMaxPositions = 40;

// The batched decoder under test and, per row, a one-row decoder fed the same tokens.
template <typename T>
struct Rows {
  Model<T>& model;
  Decoder<T> dec;
  std::vector<std::unique_ptr<Decoder<T>>> ref;  // (kB) one-row decoders
  double rtol, atol;
  int checks = 0;

  static DecoderOptions options(int batch, int window) {
    DecoderOptions o;
    o.batch = batch;
    o.max_segment = 3;  // longer prompts go in pieces
    o.max_positions = kMaxPositions;
    o.window = window;  // softmax: a ring of the last `window` positions (0: the whole cache)
    return o;
  }
  Rows(Model<T>& m, int window, double rtol_, double atol_)
      : model(m), dec(m, options(kB, window)), rtol(rtol_), atol(atol_) {
    for (int b = 0; b < kB; ++b) ref.push_back(std::make_unique<Decoder<T>>(m, options(1, window)));
  }
  void check(int b) {
    INFO("row ", b, " at position ", dec.position(b));
    REQUIRE(dec.position(b) == ref[size_t(b)]->position());
    test::check_close("row logits vs its own decoder", dec.row_logits(b), ref[size_t(b)]->row_logits(0),
                      size_t(kV), rtol, atol);
    ++checks;
  }
  // Row b starts over with a prompt prefilled in pieces of at most max_segment.
  void join(int b, const std::vector<int32_t>& prompt) {
    dec.reset_row(b);
    ref[size_t(b)]->reset();
    for (size_t t0 = 0; t0 < prompt.size(); t0 += 3) {
      const int S = static_cast<int>(std::min<size_t>(3, prompt.size() - t0));
      dec.prefill_row(b, prompt.data() + t0, S);
      ref[size_t(b)]->prefill(prompt.data() + t0, S);
    }
    check(b);
  }
  // One batched step of the listed rows, each with its own token.
  void step(const std::vector<int>& rows, const std::vector<int32_t>& tokens) {
    const T* logits = dec.step_rows(rows.data(), int(rows.size()), tokens.data());
    for (size_t i = 0; i < rows.size(); ++i) {
      ref[size_t(rows[i])]->step(&tokens[i]);
      test::check_close("step_rows' logits are the row's", logits + i * kV, dec.row_logits(rows[i]), size_t(kV), 0, 0);
      check(rows[i]);
    }
  }
  // Row `to` becomes a copy of row `from` (its state, position and logits); so does its reference.
  void copy(int from, int to, std::vector<uint8_t>& bytes, std::vector<uint8_t>& ref_bytes) {
    dec.row_save(from, bytes.data());
    dec.row_restore(to, bytes.data());
    ref[size_t(from)]->row_save(0, ref_bytes.data());
    ref[size_t(to)]->row_restore(0, ref_bytes.data());
    check(to);
  }
};

template <typename T>
void check_rows(const ModelSpec& spec, int window, double rtol, double atol) {
  Model<T> model(spec);
  model_init(model, 11);
  // The short convolution's variants: not the identity (0.2: larger taps grow the activations, and with
  // them the float rounding of a batched product against a one-row one, past this tolerance).
  test::conv_taps_randomize(model, 11, 0.2);
  Rows<T> r(model, window, rtol, atol);
  std::vector<uint8_t> bytes(static_cast<size_t>(r.dec.row_bytes())), ref_bytes(static_cast<size_t>(r.ref[0]->row_bytes()));
  // Rows 0..2 join at different lengths; row 3 idles.
  r.join(0, test::rows_tokens(1, 7));
  r.join(1, test::rows_tokens(2, 1));
  r.join(2, test::rows_tokens(3, 4));
  uint64_t seed = 100;
  auto next = [&](size_t n) { return test::rows_tokens(seed++, int(n)); };
  for (int s = 0; s < 5; ++s) r.step({0, 1, 2}, next(3));
  // Row 3 joins with a prompt in pieces while the others keep stepping between them.
  const std::vector<int32_t> prompt3 = test::rows_tokens(4, 5);
  r.dec.reset_row(3);
  r.ref[3]->reset();
  for (size_t t0 = 0; t0 < prompt3.size(); t0 += 3) {
    const int S = static_cast<int>(std::min<size_t>(3, prompt3.size() - t0));
    r.dec.prefill_row(3, prompt3.data() + t0, S);
    r.ref[3]->prefill(prompt3.data() + t0, S);
    r.step({2, 0}, next(2));  // another order, row 1 idle
  }
  r.check(3);
  for (int s = 0; s < 3; ++s) r.step({3, 1, 0, 2}, next(4));
  // Row 1 leaves and comes back with a new text; row 2 is copied into row 0, and both go on.
  r.join(1, test::rows_tokens(5, 2));
  r.copy(2, 0, bytes, ref_bytes);
  for (int s = 0; s < 4; ++s) r.step({0, 1, 2, 3}, next(4));
  for (int s = 0; s < 2; ++s) r.step({1}, next(1));  // a single row
  r.step({0, 1, 2, 3}, next(4));  // every row through step() too
  const std::vector<int32_t> all = next(4);
  r.dec.step(all.data());
  for (int b = 0; b < kB; ++b) {
    r.ref[size_t(b)]->step(&all[size_t(b)]);
    r.check(b);
  }
  CHECK(r.checks > 50);
  // The rows are at different positions (the test would be weaker if they were not).
  CHECK(r.dec.position(0) != r.dec.position(1));
  CHECK(r.dec.position(1) != r.dec.position(3));
}

}  // namespace

TEST_CASE("decoder rows: rows at their own positions step as separate one-row decoders, every variant") {
  for (const test::AttentionVariant& v : test::attention_variants()) {
    INFO("variant: ", std::string(v.name));
    const ModelSpec spec = test::rows_model_spec(v);
    check_rows<double>(spec, 0, 1e-10, 1e-12);
    // float: the step is batch-invariant (kernels/step_gemm.h), so a row's logits are its one-row
    // decoder's to the bit, whatever steps beside it.
    check_rows<float>(spec, 0, 0, 0);
    if (v.grows) check_rows<float>(spec, 6, 0, 0);  // a ring window of 6 around every row's text
  }
}

TEST_CASE("decoder rows: a row's mistakes are refused naming the row; the other rows are untouched") {
  Model<float> model(test::rows_model_spec(test::attention_variant("rfa_gate gaussian")));
  model_init(model, 1);
  DecoderOptions o;
  o.batch = 3;
  o.max_segment = 4;
  o.prefill_rows = 1;
  Decoder<float> dec(model, o);
  const int32_t tokens[] = {1, 2, 3};
  dec.prefill_row(2, tokens, 3);
  std::vector<float> before(dec.row_logits(2), dec.row_logits(2) + kV);
  const int twice[] = {0, 0};
  CHECK_THROWS_WITH_AS(dec.step_rows(twice, 2, tokens), doctest::Contains("row 0 listed twice"), Error);
  const int outside[] = {3};
  CHECK_THROWS_WITH_AS(dec.step_rows(outside, 1, tokens), doctest::Contains("row 3 outside the batch of 3"), Error);
  CHECK_THROWS_WITH_AS(dec.prefill(tokens, 1), doctest::Contains("prefill each with prefill_row"), Error);
  CHECK(dec.row_logits(0) == nullptr);  // never run
  CHECK(std::vector<float>(dec.row_logits(2), dec.row_logits(2) + kV) == before);
  CHECK(dec.position(2) == 3);
  CHECK(dec.position(1) == 0);
}

TEST_CASE("decoder rows: steps of 8 rows and more (row-wise work split by rows over two threads) and the team below give each row its one-row decoder's bits, every variant") {
  // From 8 rows, with weights that stay in cache, each thread takes its share of the rows through the
  // whole step, attention steps included (decoder_step.cpp step_layers); below, the two threads work
  // as a team: each its rows through the row kernels and attention steps, and its share of each
  // product's columns over all the rows. 12 rows at their own positions step together, then 9 of
  // them in another order, then 5, 2 and 1 (the team; one row leaves the second thread no rows of its
  // own), then all 12 through step() (no row list: each thread's rows name their state rows by
  // offset): every row's logits are its one-row decoder's, bit for bit.
  // Fork factor 0: this tiny model's steps split as a large one's do; 64 (forks as dear as under
  // OMP_WAIT_POLICY=passive on a busy machine): nothing forks, the same bits.
  for (double factor : {0.0, 64.0})
  for (const test::AttentionVariant& v : test::attention_variants()) {
    test::ForkFactorScope pool(2, factor);
    INFO("variant: ", std::string(v.name), ", fork factor ", factor);
    Model<float> model(test::rows_model_spec(v));
    model_init(model, 12);
    test::conv_taps_randomize(model, 12, 0.2);
    constexpr int B = 12;
    DecoderOptions o;
    o.batch = B;
    o.max_segment = 8;
    o.max_positions = kMaxPositions;
    Decoder<float> dec(model, o);
    o.batch = 1;
    std::vector<std::unique_ptr<Decoder<float>>> ref;
    for (int b = 0; b < B; ++b) {
      ref.push_back(std::make_unique<Decoder<float>>(model, o));
      const std::vector<int32_t> prompt = test::rows_tokens(uint64_t(50 + b), 1 + b % 6);
      dec.prefill_row(b, prompt.data(), int(prompt.size()));
      ref.back()->prefill(prompt.data(), int(prompt.size()));
    }
    uint64_t seed = 300;
    auto step = [&](const std::vector<int>& rows) {
      const std::vector<int32_t> tokens = test::rows_tokens(seed++, int(rows.size()));
      const float* logits = dec.step_rows(rows.data(), int(rows.size()), tokens.data());
      for (size_t i = 0; i < rows.size(); ++i) {
        INFO("row ", rows[i], " of ", rows.size());
        const float* alone = ref[size_t(rows[i])]->step(&tokens[i]);
        CHECK(std::equal(logits + i * kV, logits + (i + 1) * kV, alone));
      }
    };
    for (int s = 0; s < 3; ++s) step({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    for (int s = 0; s < 2; ++s) step({11, 3, 7, 0, 5, 9, 2, 8, 1});
    step({4, 6, 10, 1, 0});
    step({9, 2});
    step({7});
    step({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    for (int s = 0; s < 2; ++s) {
      const std::vector<int32_t> tokens = test::rows_tokens(seed++, B);
      const float* logits = dec.step(tokens.data());
      for (int b = 0; b < B; ++b) {
        INFO("row ", b, " of step()");
        const float* alone = ref[size_t(b)]->step(&tokens[size_t(b)]);
        CHECK(std::equal(logits + b * kV, logits + (b + 1) * kV, alone));
      }
    }
  }
}
