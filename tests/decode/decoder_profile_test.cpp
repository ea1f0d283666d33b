// The decode step under `rfa bench decode --profile` (core/step_profile.h): each kernel of a step
// counted once for all its rows, with the operations and bytes its rows have, whether the step's
// rows split over two threads (the first thread's calls count for all) or not.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/step_profile.h"
#include "decode/decoder.h"
#include "support/attention_variants.h"
#include "support/decoder_rows_model.h"
#include "support/fork_factor.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

const test::AttentionVariant& variant_named(const std::string& name) {
  for (const test::AttentionVariant& v : test::attention_variants())
    if (name == v.name) return v;
  FAIL("no attention variant " << name);
  return test::attention_variants().front();
}

constexpr int kRows = 12;  // the step's rows: above the row split's threshold

DecoderOptions profiled_options() {
  DecoderOptions o;
  o.batch = kRows;
  o.max_segment = 8;
  o.max_positions = 32;
  return o;
}

// Prompts of one length, as the benchmark's rows: a split's first thread counts its rows' bytes
// for all the rows, which is exact when every row's state is the same size.
void prefill_rows(Decoder<float>& dec, uint64_t seed) {
  for (int b = 0; b < kRows; ++b) {
    const std::vector<int32_t> prompt = test::rows_tokens(seed + uint64_t(b), 3);
    dec.prefill_row(b, prompt.data(), int(prompt.size()));
  }
}

// Elements the rows' states hold (before a step).
int64_t states_in_use(const Decoder<float>& dec) {
  int64_t n = 0;
  for (int b = 0; b < kRows; ++b) n += dec.row_state_size(dec.position(b));
  return n;
}

Model<float>& initialized(Model<float>& model, uint64_t seed) {
  model_init(model, seed);
  return model;
}

// A variant's model (weights from `init_seed`) and its profiled decoder, every row prefilled
// (prefill_rows from `prompt_seed`).
struct ProfiledRows {
  Model<float> model;
  Decoder<float> dec;
  ProfiledRows(const test::AttentionVariant& v, uint64_t init_seed, uint64_t prompt_seed)
      : model(test::rows_model_spec(v)), dec(initialized(model, init_seed), profiled_options()) {
    prefill_rows(dec, prompt_seed);
  }
};

const ProfileRow& row(ProfiledKernel k) { return step_profile_row(k); }

}  // namespace

TEST_CASE("decoder profile: a step's kernels once for all its rows, split over two threads or not") {
  for (const char* name : {"rfa_gate gaussian", "softmax (rope)"})
    for (double factor : {0.0, 64.0}) {  // 0: the 12 rows split over the two threads; 64: one thread
      test::ForkFactorScope pool(2, factor);
      INFO("variant: ", std::string(name), ", fork factor ", factor);
      ProfiledRows rows(variant_named(name), 3, 10);
      Decoder<float>& dec = rows.dec;
      const ModelSpec& s = rows.model.spec;
      constexpr int B = kRows;
      const std::vector<int32_t> tokens = test::rows_tokens(99, B);
      step_profile_enable(false);
      dec.step(tokens.data());
      CHECK(step_profile_row(ProfiledKernel::step_products).calls == 0);
      const int64_t state_in_use = states_in_use(dec);  // before the profiled step

      step_profile_enable(true, false);
      dec.step(tokens.data());
      const int L = s.L;
      const double C = s.C, Hf = s.Hf, V = s.V;
      // q, k, v (one group), o, w1 w3, w2 a layer, then the head: 2 M N K each.
      CHECK(row(ProfiledKernel::step_products).calls == 4 * L + 1);
      CHECK(row(ProfiledKernel::step_products).flop == doctest::Approx(2.0 * B * (L * (4 * C * C + 3 * C * Hf) + C * V)));
      CHECK(row(ProfiledKernel::attention_step).calls == L);
      // A recurrent state is read and written whole; a KV cache's filled slots are read.
      const double state_bytes = double(state_in_use) * sizeof(float);
      CHECK(row(ProfiledKernel::attention_step).bytes ==
            doctest::Approx(std::string(name) == "softmax (rope)" ? state_bytes : 2 * state_bytes));
      CHECK(row(ProfiledKernel::rmsnorm).calls == 2 * L + 1);
      CHECK(row(ProfiledKernel::rmsnorm).flop == doctest::Approx(4.0 * B * C * (2 * L + 1)));
      CHECK(row(ProfiledKernel::swiglu).calls == L);
      CHECK(row(ProfiledKernel::embedding).calls == 1);
      CHECK(row(ProfiledKernel::embedding).bytes == doctest::Approx(2.0 * B * C * sizeof(float)));
      // The split's join is timed where the rows split, and only there.
      CHECK(row(ProfiledKernel::split_wait).calls == (factor == 0.0 ? 1 : 0));
      for (ProfiledKernel k : {ProfiledKernel::step_products, ProfiledKernel::attention_step, ProfiledKernel::rmsnorm}) {
        CHECK(row(k).ms > 0);
        CHECK(row(k).cpu_ms == 0);  // wall clock only
      }
      step_profile_enable(false);
    }
}

// Below the row split (5 rows of this small model) the step's two threads are a team (decoder_step.cpp):
// thread 0 profiled for both, each product counted once with all its rows' operations, and its waits
// at the team's meetings (before and after each product) and at the region's end as the split's join.
TEST_CASE("decoder profile: a team's step counts each kernel once for all its rows, its meetings as waits") {
  test::ForkFactorScope pool(2, 0.0);
  ProfiledRows rows(variant_named("rfa_gate gaussian"), 3, 10);
  Decoder<float>& dec = rows.dec;
  const ModelSpec& s = rows.model.spec;
  const std::vector<int> stepped = {0, 2, 4, 6, 8};
  const int B = int(stepped.size());
  const std::vector<int32_t> tokens = test::rows_tokens(97, B);
  int64_t state_in_use = 0;
  for (int b : stepped) state_in_use += dec.row_state_size(dec.position(b));
  step_profile_enable(true, false);
  dec.step_rows(stepped.data(), B, tokens.data());
  const int L = s.L;
  const double C = s.C, Hf = s.Hf, V = s.V;
  CHECK(row(ProfiledKernel::step_products).calls == 4 * L + 1);
  CHECK(row(ProfiledKernel::step_products).flop == doctest::Approx(2.0 * B * (L * (4 * C * C + 3 * C * Hf) + C * V)));
  CHECK(row(ProfiledKernel::attention_step).calls == L);
  CHECK(row(ProfiledKernel::attention_step).bytes == doctest::Approx(2.0 * double(state_in_use) * sizeof(float)));
  CHECK(row(ProfiledKernel::rmsnorm).calls == 2 * L + 1);
  CHECK(row(ProfiledKernel::rmsnorm).flop == doctest::Approx(4.0 * B * C * (2 * L + 1)));
  CHECK(row(ProfiledKernel::swiglu).calls == L);
  CHECK(row(ProfiledKernel::embedding).bytes == doctest::Approx(2.0 * B * C * sizeof(float)));
  CHECK(row(ProfiledKernel::split_wait).calls == 2 * (4 * L + 1) + 1);
  step_profile_enable(false);
}

// A model with the short convolution and the output gate: the gate's W_g counted with the step's
// products, the convolution in its own row with its history's bytes, which the attention step's
// state bytes then leave out.
TEST_CASE("decoder profile: the short convolution's row and the output gate's product") {
  const test::AttentionVariant& v = variant_named("rfa_delta short conv 3 output gate");
  for (double factor : {0.0, 64.0}) {
    test::ForkFactorScope pool(2, factor);
    INFO("fork factor ", factor);
    ProfiledRows rows(v, 4, 20);
    Decoder<float>& dec = rows.dec;
    const ModelSpec& s = rows.model.spec;
    constexpr int B = kRows, K = 3;
    const int64_t state_in_use = states_in_use(dec);
    const std::vector<int32_t> tokens = test::rows_tokens(98, B);
    step_profile_enable(true, false);
    dec.step(tokens.data());
    const int L = s.L;
    const double C = s.C, Hf = s.Hf, V = s.V;
    // q, k, v, o, w1 w3, w2 and the gate's W_g a layer, then the head.
    CHECK(row(ProfiledKernel::step_products).calls == 5 * L + 1);
    CHECK(row(ProfiledKernel::step_products).flop ==
          doctest::Approx(2.0 * B * (L * (5 * C * C + 3 * C * Hf) + C * V)));
    CHECK(row(ProfiledKernel::gemm).calls == 0);
    CHECK(row(ProfiledKernel::output_gate).calls == L);
    CHECK(row(ProfiledKernel::short_conv).calls == L);
    CHECK(row(ProfiledKernel::short_conv).flop == doctest::Approx(2.0 * K * 3 * C * B * L));
    CHECK(row(ProfiledKernel::short_conv).bytes == doctest::Approx(2.0 * K * 3 * C * B * L * sizeof(float)));
    CHECK(row(ProfiledKernel::short_conv).ms > 0);
    // The kind's state read and written whole, without the convolution's K-1 rows of q, k and v.
    const double conv_history = 3.0 * (K - 1) * C * B * L;
    CHECK(row(ProfiledKernel::attention_step).bytes ==
          doctest::Approx(2.0 * (double(state_in_use) - conv_history) * sizeof(float)));
    step_profile_enable(false);
  }
}
