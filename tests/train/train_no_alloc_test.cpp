// "No allocation inside the step" (STYLE.md), for every attention kind and option
// (support/attention_variants.h): after one warm-up call, the counted region makes ZERO
// heap allocations of ours (support/alloc_counter.h counts every operator new, on every
// thread):
//  - the model's forward and backward (double path: reference gemm, no oneDNN): zero at all;
//  - a float training step: batch, forward, backward, clipping and the AdamW update
//    (TrainSession::step), plain (under each train.thread_split) and stateful;
//  - a decode step: Decoder::step and Decoder::step_rows, and the Sampler's sample()
//    over the logits they return;
//  - every evaluation after the first (which builds its decoder).
// The one exception is oneDNN's own allocations inside its calls (dnnl_sgemm allocates
// when it splits a product over threads; kernels/onednn_call_scope.h), counted apart:
// a training step's are the same every step, and reported.
// bf16: train_no_alloc_bf16_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "config/config_enums.h"
#include "decode/decoder.h"
#include "model/model_forward.h"
#include "support/alloc_counter.h"
#include "support/attention_variants.h"
#include "support/no_alloc_loops.h"
#include "support/train_fixtures.h"
#include "train/train_session.h"

using namespace rfa;

namespace {

constexpr int kV = 20;

Config small_config(const test::AttentionVariant& v) {
  Config c = test::with_variant(test::train_config(AttentionKind::rfa_gate, kV), v);
  c.train.batch_size = 3;
  c.train.grad_accum = 2;
  return c;
}

std::vector<uint16_t> cyclic_tokens() {
  std::vector<uint16_t> tokens(500);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>((i * 7) % kV);
  return tokens;
}

}  // namespace

TEST_CASE("no allocation: model forward and backward (double path), every variant") {
  for (const test::AttentionVariant& v : test::attention_variants()) {
    INFO("variant ", std::string(v.name));
    Config c = small_config(v);
    ModelSpec spec = model_spec_make(c.model, c.attention);
    Model<double> model(spec);
    model_init(model, 1);
    Activations<double> acts(spec, 3, 16);
    std::vector<int32_t> in(48), tg(48);
    for (int i = 0; i < 48; ++i) in[i] = i % kV, tg[i] = (i + 1) % kV;
    model_forward(model, acts, in.data(), tg.data(), model.random_fixed());
    model_backward(model, acts, in.data(), tg.data(), model.random_fixed());
    uint64_t r = 0;
    const std::vector<long> onednn = test::check_no_allocation(2, [&] {
      model.zero_grad();
      model_draw_random(spec, 1, r++, model.random_step());
      model_forward(model, acts, in.data(), tg.data(), model.random_step());
      model_backward(model, acts, in.data(), tg.data(), model.random_step(), 0.5);
    });
    CHECK(onednn == std::vector<long>(2, 0));  // double: the reference gemm, no oneDNN at all
  }
}

TEST_CASE("no allocation: a float training step (forward, backward, AdamW) and later evaluations, every variant") {
  const std::vector<uint16_t> tokens = cyclic_tokens();
  const TokenSplit split = test::split_of(tokens);
  const std::vector<int32_t> val = split.to_vector();
  long onednn_most = 0;
  for (const test::AttentionVariant& v : test::attention_variants())
    for (ThreadSplit how : {ThreadSplit::kernels, ThreadSplit::batch}) {  // batch: the rows over the pool's threads
      INFO("variant ", std::string(v.name), ", thread split ", std::string(enum_name(how)));
      const Config c = test::with_thread_split(small_config(v), how);
      TrainSession session(c, model_spec_make(c.model, c.attention));
      BatchSampler sampler(split, c.train.batch_size, 16, 1);
      onednn_most = std::max(onednn_most, test::check_training_steps_allocate_nothing(session, sampler, 3));
      session.evaluate(val);  // the first builds its decoder
      test::check_no_allocation(2, [&] { session.evaluate(val); });
    }
  MESSAGE("oneDNN's own allocations per training step (inside dnnl_sgemm), at most: ", onednn_most);
}

TEST_CASE("no allocation: a stateful training step, every variant stateful training runs") {
  const std::vector<uint16_t> tokens = cyclic_tokens();
  const TokenSplit split = test::split_of(tokens);
  for (const test::AttentionVariant& v : test::attention_variants_stateful()) {
    INFO("variant ", std::string(v.name));
    Config c = small_config(v);
    c.train.stateful = true;
    TrainSession stateful(c, model_spec_make(c.model, c.attention));
    StreamSampler streams(split, 3, 16, 2);
    stateful.step(0, streams);
    int64_t s = 1;
    const std::vector<long> onednn = test::check_no_allocation(3, [&] { stateful.step(s++, streams); });
    CHECK(onednn == std::vector<long>(3, onednn[0]));
  }
}

TEST_CASE("no allocation: a decode step (Decoder::step, step_rows) and sampling, every variant") {
  constexpr int B = test::kDecodeNoAllocRows;
  for (const test::AttentionVariant& v : test::attention_variants()) {
    INFO("variant ", std::string(v.name));
    const Config c = small_config(v);
    Model<float> model(model_spec_make(c.model, c.attention));
    model_init(model, 4);
    DecoderOptions o;
    o.batch = B;
    o.max_positions = 64;
    o.window = v.grows ? 8 : 0;  // softmax: a ring cache that wraps within the steps below
    Decoder<float> dec(model, o);
    test::check_decode_steps_allocate_nothing(dec, kV, 12);
    CHECK(dec.position(0) == 4 + 2 * 13);  // 13 decode steps ran: rows 0 and 2 move twice in each
  }
}

TEST_CASE("no allocation: decoder prefill and step (double path), every variant") {
  for (const test::AttentionVariant& v : test::attention_variants()) {
    INFO("variant ", std::string(v.name));
    const Config c = small_config(v);
    Model<double> model(model_spec_make(c.model, c.attention));
    model_init(model, 1);
    DecoderOptions o;
    o.batch = 2;
    o.max_segment = 8;
    o.max_positions = 64;
    Decoder<double> dec(model, o);
    std::vector<int32_t> prompt(16), tok = {3, 5};
    for (int i = 0; i < 16; ++i) prompt[size_t(i)] = (i * 3) % kV;
    const int rows[1] = {1};
    auto run = [&] {
      dec.reset();
      dec.prefill(prompt.data(), 8);
      for (int s = 0; s < 5; ++s) dec.step(tok.data());
      dec.step_rows(rows, 1, tok.data());
      dec.prefill(prompt.data(), 3);
    };
    run();  // warm-up
    test::check_no_allocation(2, run);
  }
}
