// "No allocation inside the step". This file replaces the global operator new
// of the test binary with a counting one (malloc-based, behaviour unchanged;
// every non-aligned form, so that new and delete always pair up).
//  - The model's forward and backward (double path: reference gemm, no oneDNN)
//    make no allocation at all after the first call.
//  - A float training step makes the same number of allocations every step:
//    only oneDNN allocates internally (dnnl_sgemm a fixed few per call; a bf16
//    matmul's execute its argument map), which our code does not control;
//    nothing of ours allocates or grows per step, in fp32 or bf16.
//  - So does every evaluation after the first (which builds its decoder).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "config/config_enums.h"
#include "decode/decoder.h"
#include "kernels/bf16.h"
#include "model/model_forward.h"
#include "support/train_fixtures.h"
#include "train/train_session.h"

namespace {
std::atomic<long> g_news{0};
}

void* operator new(std::size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
// The nothrow forms too (std::stable_sort's buffer uses them): with only the plain
// ones replaced, their memory came from the library's allocator and went back
// through the free() below (AddressSanitizer: alloc-dealloc-mismatch).
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  g_news.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

using namespace rfa;

namespace {

Config small_config(AttentionKind kind) {
  Config c = test::train_config(kind, 20);
  c.train.batch_size = 3;
  c.train.grad_accum = 2;
  return c;
}

}  // namespace

TEST_CASE("model: forward and backward allocate nothing (double path)") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa, AttentionKind::rfa_gate})
  for (int short_conv : {0, 4}) {
    Config c = small_config(kind);
    c.attention.short_conv = short_conv;
    ModelSpec spec = model_spec_make(c.model, c.attention);
    Model<double> model(spec);
    model_init(model, 1);
    Activations<double> acts(spec, 3, 16);
    std::vector<int32_t> in(48), tg(48);
    for (int i = 0; i < 48; ++i) in[i] = i % 20, tg[i] = (i + 1) % 20;
    model_forward(model, acts, in.data(), tg.data(), model.random_fixed());
    model_backward(model, acts, in.data(), tg.data(), model.random_fixed());
    long before = g_news.load();
    for (int r = 0; r < 2; ++r) {
      model.zero_grad();
      model_draw_random(spec, 1, static_cast<uint64_t>(r), model.random_step());
      model_forward(model, acts, in.data(), tg.data(), model.random_step());
      model_backward(model, acts, in.data(), tg.data(), model.random_step(), 0.5);
    }
    CHECK(g_news.load() == before);
  }
}

TEST_CASE("train: every float training step makes the same allocations (oneDNN's only)") {
  for (Precision precision : {Precision::fp32, Precision::bf16})
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate})
  for (int short_conv : {0, 4}) {
    if (precision == Precision::bf16 && !bf16_native()) {
      MESSAGE("bf16 skipped: this CPU has no AVX512-BF16");
      continue;
    }
    Config c = small_config(kind);
    c.attention.short_conv = short_conv;
    c.train.precision = precision;
    std::vector<uint16_t> tokens(500);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>((i * 7) % 20);
    TokenSplit split = test::split_of(tokens);
    TrainSession session(c, model_spec_make(c.model, c.attention));
    BatchSampler sampler(split, 3, 16, 1);
    session.step(0, sampler);
    std::vector<long> per_step;
    for (int s = 1; s < 5; ++s) {
      long before = g_news.load();
      session.step(s, sampler);
      per_step.push_back(g_news.load() - before);
    }
    MESSAGE("allocations per ", std::string(enum_name(precision)), " step (inside oneDNN): ", per_step[0]);
    for (long n : per_step) CHECK(n == per_step[0]);
    // Evaluation: the first builds its decoder; every later one allocates as
    // much as the one before (oneDNN's own, if any), never more.
    const std::vector<int32_t> val = split.to_vector();
    session.evaluate(val);
    std::vector<long> per_eval;
    for (int e = 0; e < 3; ++e) {
      long before = g_news.load();
      session.evaluate(val);
      per_eval.push_back(g_news.load() - before);
    }
    MESSAGE("allocations per evaluation after the first: ", per_eval[0]);
    for (long n : per_eval) CHECK(n == per_eval[0]);
  }
}

TEST_CASE("train: a stateful step makes the allocations of a step over random windows") {
  for (int short_conv : {0, 3}) {
  Config c = small_config(AttentionKind::rfa_gate);
  c.attention.short_conv = short_conv;
  std::vector<uint16_t> tokens(500);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>((i * 7) % 20);
  TokenSplit split = test::split_of(tokens);
  TrainSession plain(c, model_spec_make(c.model, c.attention));
  BatchSampler sampler(split, 3, 16, 1);
  c.train.stateful = true;
  TrainSession stateful(c, model_spec_make(c.model, c.attention));
  StreamSampler streams(split, 3, 16, 2);
  plain.step(0, sampler);
  stateful.step(0, streams);
  for (int s = 1; s < 4; ++s) {
    long before = g_news.load();
    plain.step(s, sampler);
    const long plain_news = g_news.load() - before;
    before = g_news.load();
    stateful.step(s, streams);
    CHECK(g_news.load() - before == plain_news);
  }
  }
}

TEST_CASE("decode: prefill and step allocate nothing after construction (double path), with the short convolution") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate})
    for (int short_conv : {0, 4}) {
      CAPTURE(short_conv);
      Config c = small_config(kind);
      c.attention.short_conv = short_conv;
      ModelSpec spec = model_spec_make(c.model, c.attention);
      Model<double> model(spec);
      model_init(model, 1);
      DecoderOptions o;
      o.batch = 2;
      o.max_segment = 8;
      o.max_positions = 64;
      Decoder<double> dec(model, o);
      std::vector<int32_t> prompt(16), tok = {3, 5};
      for (int i = 0; i < 16; ++i) prompt[size_t(i)] = (i * 3) % 20;
      const int rows[1] = {1};
      const long before = g_news.load();
      dec.prefill(prompt.data(), 8);
      for (int s = 0; s < 5; ++s) dec.step(tok.data());
      dec.step_rows(rows, 1, tok.data());
      dec.reset();
      dec.prefill(prompt.data(), 3);
      CHECK(g_news.load() == before);
    }
}
