// train.precision bf16 against fp32 on a tiny model: the same step's loss and
// gradients agree within bf16's rounding, a short run follows the fp32 losses,
// no step creates a bf16 primitive, and the fp32 master weights are what a bf16 step
// updates. Needs AVX512-BF16: skipped without (support/skip.h). (Resume of a bf16 run:
// train_resume_bf16_test.cpp; no allocation in a bf16 step: train_no_alloc_bf16_test.cpp.
// Gradient checks stay in double.)
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "config/config_enums.h"
#include "kernels/bf16.h"
#include "kernels/gemm_bf16.h"
#include "support/skip.h"
#include "support/train_fixtures.h"
#include "train/train_session.h"

using namespace rfa;

namespace {

Config tiny_config(AttentionKind kind, Precision precision) {
  Config c = test::train_config(kind, 16);
  c.model.n_layers = 2;
  c.model.d_model = 64;
  c.train.batch_size = 4;
  c.train.seed = 9;
  c.train.precision = precision;
  c.optim.lr = 3e-3;
  c.optim.warmup_steps = 2;
  c.optim.grad_clip = 0;  // the gradients are compared as the backward left them
  return c;
}

// |a - b| / |b| over one tensor (Frobenius norms).
double relative_error(const float* a, const float* b, int64_t n) {
  double diff = 0, ref = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    ref += double(b[i]) * b[i];
  }
  return ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff);
}

}  // namespace

TEST_CASE("train bf16: one step's loss and every gradient tensor agree with fp32 within bf16 rounding") {
  if (rfa::test::skip_if(!bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate}) {
    CAPTURE(std::string(enum_name(kind)));
    std::vector<uint16_t> tokens = test::random_tokens(3000, 4);
    TokenSplit split = test::split_of(tokens);
    const Config c32 = tiny_config(kind, Precision::fp32), c16 = tiny_config(kind, Precision::bf16);
    const ModelSpec spec = model_spec_make(c32.model, c32.attention);
    BatchSampler sampler(split, c32.train.batch_size, c32.model.context_length, c32.train.seed);
    TrainSession fp32(c32, spec), bf16(c16, spec);
    const double loss32 = fp32.step(0, sampler).loss, loss16 = bf16.step(0, sampler).loss;
    // bf16 keeps 8 significant bits: inputs rounded by 2^-9 relative, products summed in f32.
    CHECK(loss16 == doctest::Approx(loss32).epsilon(2e-3));
    double worst = 0;
    std::string worst_name;
    for (const ParamEntry& e : fp32.model().table.entries()) {
      const double err = relative_error(bf16.model().grads() + e.offset, fp32.model().grads() + e.offset, e.numel);
      if (err > worst) worst = err, worst_name = e.name;
    }
    MESSAGE(std::string(enum_name(kind)), ": loss fp32 ", loss32, " bf16 ", loss16,
            "; worst gradient relative error ", worst, " (", worst_name, ")");
    // Stated tolerance: every tensor's gradient within 5% (Frobenius) of fp32's; a
    // product read in float where bf16 was meant, or a wrong layout, is off by far more.
    CHECK(worst < 0.05);
    CHECK(worst > 0);  // the products did run in bf16
  }
}

TEST_CASE("train bf16: 40 steps follow the fp32 losses; the master weights stay float") {
  if (rfa::test::skip_if(!bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  // A learnable stream: each token is a function of the one before, with a random token every 8th.
  std::vector<uint16_t> tokens = test::random_tokens(5000, 8);
  for (size_t i = 1; i < tokens.size(); ++i)
    if (i % 8 != 0) tokens[i] = static_cast<uint16_t>((tokens[i - 1] * 5 + 3) % 16);
  TokenSplit split = test::split_of(tokens);
  const Config c32 = tiny_config(AttentionKind::rfa_gate, Precision::fp32);
  const Config c16 = tiny_config(AttentionKind::rfa_gate, Precision::bf16);
  const ModelSpec spec = model_spec_make(c32.model, c32.attention);
  BatchSampler sampler(split, c32.train.batch_size, c32.model.context_length, c32.train.seed);
  TrainSession fp32(c32, spec), bf16(c16, spec);
  double first32 = 0, last32 = 0, last16 = 0;
  for (int64_t s = 0; s < 40; ++s) {
    const double l32 = fp32.step(s, sampler).loss, l16 = bf16.step(s, sampler).loss;
    if (s == 0) first32 = l32;
    last32 = l32, last16 = l16;
  }
  MESSAGE("step 40 loss: fp32 ", last32, " bf16 ", last16, " (step 1: ", first32, ")");
  CHECK(last32 < first32 - 0.1);  // it learned something to compare
  CHECK(last16 == doctest::Approx(last32).epsilon(0.02));
  // The master weights moved by updates smaller than a bf16 ulp: they are not bf16 values.
  const Model<float>& m = bf16.model();
  int64_t off_grid = 0;
  for (int64_t i = 0; i < m.param_size(); ++i)
    off_grid += bf16_to_float(bf16_from_float_reference(m.params()[i])) != m.params()[i];
  CHECK(off_grid > m.param_size() / 2);
}

TEST_CASE("train bf16: no step creates a bf16 primitive (the session made them)") {
  if (rfa::test::skip_if(!bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  std::vector<uint16_t> tokens = test::random_tokens(3000, 5);
  TokenSplit split = test::split_of(tokens);
  Config c = tiny_config(AttentionKind::rfa_gate, Precision::bf16);
  c.train.grad_accum = 2;
  TrainSession session(c, model_spec_make(c.model, c.attention));
  BatchSampler sampler(split, c.train.batch_size, c.model.context_length, c.train.seed);
  const int64_t created = gemm_bf16_primitive_count();
  for (int64_t s = 0; s < 4; ++s) session.step(s, sampler);
  CHECK(gemm_bf16_primitive_count() == created);
}
