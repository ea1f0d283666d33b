// The bf16 decoder (train.precision bf16 weights, --precision bf16) against the bf16
// training forward and the fp32 decoder. Needs AVX512-BF16: skipped without (support/skip.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "config/config_enums.h"
#include "core/parallel.h"
#include "kernels/bf16.h"
#include "support/decoder_cases.h"
#include "support/skip.h"

using namespace rfa;
using namespace rfa::test::decoder_cases;

TEST_CASE("decoder bf16: equals the bf16 training forward, and fp32 within bf16 rounding") {
  if (rfa::test::skip_if(!bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate}) {
    CAPTURE(std::string(enum_name(kind)));
    const ModelSpec spec = small_spec(kind);
    Model<float> fp32(spec), bf16(spec, Precision::bf16);
    model_init(fp32, 11);
    model_init(bf16, 11);
    bf16.bf16_refresh();
    const std::vector<int32_t> tokens = tokens_make(5);
    const std::vector<float> full = full_forward(bf16, tokens);  // bf16 products (bf16 activations)
    const std::vector<float> steps = decode(bf16, tokens, 0, 1, 0, Precision::bf16);
    const std::vector<float> mixed = decode(bf16, tokens, 6, 4, 0, Precision::bf16);
    const std::vector<float> prefill = decode(bf16, tokens, kT, kT, 0, Precision::bf16);
    const std::vector<float> exact = decode(fp32, tokens, 6, 4);
    // A one-row product sums in another order than the batch's: a value near a bf16
    // rounding boundary can round the other way before the next product, so the
    // paths agree to bf16's resolution (not bit for bit); against fp32, inputs
    // rounded to 8 significant bits through two layers. Frobenius, over all logits.
    const double vs_forward = std::max(relative_error(steps, full), relative_error(mixed, full));
    const double vs_fp32 = relative_error(mixed, exact);
    MESSAGE(std::string(enum_name(kind)), ": bf16 decode vs bf16 forward ", vs_forward, ", prefill ",
            relative_error(prefill, full), "; bf16 vs fp32 ", vs_fp32);
    CHECK(relative_error(prefill, full) < 1e-5);  // the same products, batched alike
    CHECK(vs_forward < 5e-3);
    CHECK(vs_fp32 < 3e-2);
    CHECK(vs_fp32 > 0);  // the bf16 products ran
  }
}

TEST_CASE("decoder bf16: the step's products in column parts give the same bits on one thread as on two") {
  if (rfa::test::skip_if(!bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  // Width 384, 2 rows: the SwiGLU's gate and up projection (2 Hf x 384, 1.5 MB of bf16) is at the
  // split's sizes (decoder.cpp pack_step_weights_bf16), so on a machine of two cores or more it is
  // packed in column parts, as many as the cores whatever the pool's threads: two threads run them
  // side by side, one runs them in turn, and the bits are the same. Against the bf16 training forward.
  Config c = rfa::test::tiny_config(AttentionKind::rfa_gate,
                                    {.vocab = kV, .context = kT, .d_model = 384, .n_heads = 6, .n_layers = 1,
                                     .num_features = 8, .chunk_size = 4, .init_std = 0.05});
  const ModelSpec spec = rfa::test::tiny_spec(c);
  Model<float> bf16(spec, Precision::bf16);
  model_init(bf16, 12);
  bf16.bf16_refresh();
  const std::vector<int32_t> tokens = tokens_make(6);
  const std::vector<float> full = full_forward(bf16, tokens);
  const int before = thread_count();
  thread_count_set(1);
  const std::vector<float> one = decode(bf16, tokens, 0, 1, 0, Precision::bf16);
  thread_count_set(2);
  const std::vector<float> two = decode(bf16, tokens, 0, 1, 0, Precision::bf16);
  thread_count_set(before);
  MESSAGE("physical cores ", physical_core_count(), ", SwiGLU hidden ", spec.Hf, "; bf16 steps vs the forward ",
          relative_error(two, full));
  CHECK(two == one);
  CHECK(relative_error(two, full) < 5e-3);
}

TEST_CASE("decoder bf16: a step of fewer rows than the batch runs fewer, with the bits those rows get in a full step") {
  if (rfa::test::skip_if(!bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  // A server's decoder has a row per slot (--parallel 64) and its bf16 products were packed for all of
  // them, so one busy slot cost a 64-row step. Width 384, a batch of 64 (every product in column parts
  // on two cores, as above): every row steps at once in one decoder, and in its twin first row 5 alone
  // and then rows 1, 2 and 6 (3 rows, run as 4): each row's logits are the full step's, bit for bit.
  // (When a column part was oneDNN's jit gemm, its one-row kernel changed q, k and v in their last
  // bits: run as one row, this failed.)
  Config c = rfa::test::tiny_config(AttentionKind::rfa_gate,
                                    {.vocab = kV, .context = kT, .d_model = 384, .n_heads = 6, .n_layers = 1,
                                     .num_features = 8, .chunk_size = 4, .init_std = 0.05});
  Model<float> bf16(rfa::test::tiny_spec(c), Precision::bf16);
  model_init(bf16, 13);
  bf16.bf16_refresh();
  constexpr int B = 64, S = 5;
  DecoderOptions o;
  o.precision = Precision::bf16;
  o.batch = B;
  o.max_segment = S;
  o.max_positions = kT;
  Decoder<float> all(bf16, o), few(bf16, o);
  std::vector<int32_t> prompt(size_t(B) * S), next(B);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 7 + 3) % kV);
  for (int b = 0; b < B; ++b) next[size_t(b)] = int32_t((b * 5 + 1) % kV);
  all.prefill(prompt.data(), S);
  few.prefill(prompt.data(), S);
  const std::vector<int> rows(few.bf16_step_rows().begin(), few.bf16_step_rows().end());
  MESSAGE("bf16 step row counts: ", fmt::format("{}", fmt::join(rows, ", ")));
  REQUIRE(rows.back() == B);
  // oneDNN's brgemm on AVX512-BF16 takes 1, 2, 4, ... rows over the 64-row packing with the same sums.
  CHECK(rows == std::vector<int>{1, 2, 4, 8, 16, 32, 64});
  const float* full = all.step(next.data());
  const std::vector<float> expected(full, full + size_t(B) * kV);
  auto check_rows = [&](std::vector<int> which) {
    std::vector<int32_t> tokens;
    for (int r : which) tokens.push_back(next[size_t(r)]);
    const float* got = few.step_rows(which.data(), int(which.size()), tokens.data());
    for (size_t i = 0; i < which.size(); ++i) {
      CAPTURE(which[i]);
      CHECK(std::equal(got + i * kV, got + (i + 1) * kV, expected.begin() + which[i] * kV));
      // and its state (float, fed by k and v straight from their products: the logits pass through
      // bf16 roundings that can hide a last bit)
      std::vector<float> mine(size_t(few.row_state_size(few.position(which[i])))), theirs(mine.size());
      few.row_state_save(which[i], mine.data());
      all.row_state_save(which[i], theirs.data());
      CHECK(std::memcmp(mine.data(), theirs.data(), mine.size() * sizeof(float)) == 0);
    }
  };
  check_rows({5});
  check_rows({1, 2, 6});
}
