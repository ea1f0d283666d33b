// Exact resume of a bf16 run in one process (train_resume_test.cpp does fp32): k steps,
// a checkpoint, a fresh session loading it and N-k more steps equal N steps straight; and
// the checkpoint continued in fp32. Needs AVX512-BF16: skipped without (support/skip.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "config/config_enums.h"
#include "kernels/bf16.h"
#include "support/resume_round_trip.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/train_fixtures.h"
#include "train/train_resume.h"
#include "train/train_session.h"

using namespace rfa;

namespace {

using test::random_tokens;
using test::split_of;

Config tiny_config(AttentionKind kind) { return test::resume_config(kind); }

bool same(const float* a, const float* b, int64_t n) { return std::equal(a, a + n, b); }

}  // namespace

TEST_CASE("resume: a bf16 run resumes bit-identically; switching precision on resume continues from the checkpoint") {
  if (rfa::test::skip_if(!bf16_native(), "no bf16 products here (no AVX512-BF16 on this CPU, or a build level below it)")) return;
  Config c = tiny_config(AttentionKind::rfa_gate);
  c.train.precision = Precision::bf16;
  const ModelSpec spec = model_spec_make(c.model, c.attention);
  std::vector<uint16_t> tokens = random_tokens(3000, 4);
  TokenSplit split = split_of(tokens);
  BatchSampler sampler(split, c.train.batch_size, c.model.context_length, c.train.seed);
  const int64_t k = 3;
  test::TempDir dir;
  TrainSession straight(c, spec), resumed(c, spec);  // resumed zeroed: the weights must come from the file
  for (int64_t i = 0; i < resumed.model().param_size(); ++i) resumed.model().params()[i] = 0.0f;
  const test::RoundTrip r =
      test::resume_round_trip(straight, resumed, sampler, dir.path(), {.steps = 6, .save_after = k});
  CHECK(r.got == r.want);  // exact: the bf16 copies come from the loaded fp32 weights
  const int64_t P = straight.model().param_size();
  CHECK(same(straight.model().params(), resumed.model().params(), P));
  CHECK(same(straight.adam_v(), resumed.adam_v(), P));

  // The same checkpoint continued in fp32: allowed, and it starts from the saved weights.
  const ResumePoint p = resume_prepare(r.checkpoint, {"train.precision=fp32"});
  CHECK(p.config.train.precision == Precision::fp32);
  TrainSession switched(p.config, spec);
  resume_load(switched, r.checkpoint);
  const double loss = switched.step(k, sampler).loss;
  CHECK(loss == doctest::Approx(r.want[size_t(k)]).epsilon(5e-3));
  CHECK(loss != r.want[size_t(k)]);  // fp32 products now
}
