// "No allocation inside the step" for train.precision bf16 and a bf16 decoder
// (train_no_alloc_test.cpp does fp32): after a warm-up step, ZERO heap allocations in a
// training step and in a decode step with sampling, for every attention kind and option
// (oneDNN's own inside its calls counted apart, as there).
// Needs AVX512-BF16: skipped without (support/skip.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "config/config_enums.h"
#include "decode/decoder.h"
#include "kernels/bf16.h"
#include "support/alloc_counter.h"
#include "support/attention_variants.h"
#include "support/no_alloc_loops.h"
#include "support/skip.h"
#include "support/train_fixtures.h"
#include "train/train_session.h"

using namespace rfa;

namespace {

constexpr int kV = 20;

Config small_config(const test::AttentionVariant& v) {
  Config c = test::with_variant(test::train_config(AttentionKind::rfa_gate, kV), v);
  c.train.batch_size = 3;
  c.train.grad_accum = 2;
  c.train.precision = Precision::bf16;
  return c;
}

const char* kNoBf16 = "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)";

}  // namespace

TEST_CASE("no allocation bf16: a training step (forward, backward, AdamW), every variant") {
  if (test::skip_if(!bf16_native(), kNoBf16)) return;
  std::vector<uint16_t> tokens(500);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>((i * 7) % kV);
  const TokenSplit split = test::split_of(tokens);
  long onednn_most = 0;
  for (const test::AttentionVariant& v : test::attention_variants())
    for (ThreadSplit how : {ThreadSplit::kernels, ThreadSplit::batch}) {  // batch: each thread's own products
      INFO("variant ", std::string(v.name), ", thread split ", std::string(enum_name(how)));
      const Config c = test::with_thread_split(small_config(v), how);
      TrainSession session(c, model_spec_make(c.model, c.attention));
      BatchSampler sampler(split, c.train.batch_size, 16, 1);
      onednn_most = std::max(onednn_most, test::check_training_steps_allocate_nothing(session, sampler, 2));
    }
  MESSAGE("oneDNN's own allocations per bf16 training step (inside its matmul's execute), at most: ", onednn_most);
}

TEST_CASE("no allocation bf16: a decode step (Decoder::step, step_rows) and sampling, every variant") {
  if (test::skip_if(!bf16_native(), kNoBf16)) return;
  constexpr int B = test::kDecodeNoAllocRows;
  for (const test::AttentionVariant& v : test::attention_variants()) {
    INFO("variant ", std::string(v.name));
    const Config c = small_config(v);
    Model<float> model(model_spec_make(c.model, c.attention), Precision::bf16);
    model_init(model, 4);
    model.bf16_refresh();
    DecoderOptions o;
    o.batch = B;
    o.max_positions = 64;
    o.window = v.grows ? 8 : 0;
    o.precision = Precision::bf16;
    Decoder<float> dec(model, o);
    test::check_decode_steps_allocate_nothing(dec, kV, 6);
  }
}
