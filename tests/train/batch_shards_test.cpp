// The batch split of a training step (train/batch_shards.h): each thread's rows through the
// whole model give the loss and the gradients of the whole batch (to float rounding: the sums
// run in another order), with gradient accumulation, uneven shards and document boundaries;
// train.thread_split resolved and refused as documented; a session under each split.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "config/config_enums.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "kernels/bf16.h"
#include "model/model_forward.h"
#include "support/tiny_model.h"
#include "support/train_fixtures.h"
#include "train/batch_shards.h"
#include "train/thread_split.h"
#include "train/train_session.h"

using namespace rfa;

namespace {

// The pool at `threads` for the scope (the tests run wherever the suite runs, on any count).
struct ThreadsFor {
  int before = thread_count();
  explicit ThreadsFor(int threads) { thread_count_set(threads); }
  ~ThreadsFor() { thread_count_set(before); }
};

std::vector<int32_t> tokens_of(int64_t n, int V, uint64_t seed) {
  CounterRng rng(seed, 0xba7c);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& x : t) x = static_cast<int32_t>(rng.next_u64() % uint64_t(V));
  return t;
}

// The largest |a - b| over the largest |a|.
double relative_gap(const float* a, const float* b, int64_t n) {
  double gap = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    gap = std::max(gap, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(a[i])));
  }
  return scale > 0 ? gap / scale : gap;
}

}  // namespace

TEST_CASE("batch shards: each thread's rows give the whole batch's loss and gradients") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate, AttentionKind::rfa})
    for (int threads : {2, 3})
      for (int B : {threads, 5}) {
        const std::string name(enum_name(kind));
        CAPTURE(name);
        CAPTURE(threads);
        CAPTURE(B);
        const ThreadsFor pool(threads);
        Config c = test::tiny_config(kind, {.vocab = 23, .context = 16, .d_model = 32, .num_features = 8,
                                            .chunk_size = 8});
        const ModelSpec spec = test::tiny_spec(c);
        const int T = spec.model.context_length;
        const int64_t N = int64_t(B) * T;
        Model<float> model(spec);
        model_init(model, 7);
        model_draw_random(spec, 7, 3, model.random_step());
        const float* random = model.random_step();
        // Two micro-batches, the second accumulated; the first has document starts and ignored targets.
        const std::vector<int32_t> in0 = tokens_of(N, spec.V, 1), in1 = tokens_of(N, spec.V, 2);
        std::vector<int32_t> tg0 = tokens_of(N, spec.V, 3), tg1 = tokens_of(N, spec.V, 4);
        for (int64_t i = 0; i < N; i += 7) tg0[size_t(i)] = -1;
        std::vector<uint8_t> starts(size_t(N), 0);
        for (int64_t i = 0; i < N; i += 11) starts[size_t(i)] = 1;
        const int64_t P = model.param_size();

        // The kernel split: the whole batch in one set of activations.
        Activations<float> whole(spec, B, T);
        ModelCarry<float> docs;
        docs.segment_start = starts.data();
        const double loss0 = model_forward(model, whole, in0.data(), tg0.data(), random, docs);
        model_backward(model, whole, in0.data(), tg0.data(), random, 0.5, GradWrite::overwrite);
        const double loss1 = model_forward(model, whole, in1.data(), tg1.data(), random);
        model_backward(model, whole, in1.data(), tg1.data(), random, 0.5, GradWrite::accumulate);
        const std::vector<float> expected(model.grads(), model.grads() + P);

        // The batch split, over gradients that hold NaN: the first backward overwrites them.
        std::fill_n(model.grads(), P, std::numeric_limits<float>::quiet_NaN());
        BatchShards shards(model, B, T, Precision::fp32, threads);
        REQUIRE(shards.count() == threads);
        CHECK(shards.first_row(threads - 1) + shards.rows(threads - 1) == B);
        const double split0 = shards.forward(in0.data(), tg0.data(), random, starts.data());
        shards.backward(in0.data(), tg0.data(), random, 0.5, GradWrite::overwrite);
        const double split1 = shards.forward(in1.data(), tg1.data(), random, nullptr);
        shards.backward(in1.data(), tg1.data(), random, 0.5, GradWrite::accumulate);
        shards.reduce_grads();
        CHECK(split0 == doctest::Approx(loss0).epsilon(1e-6));
        CHECK(split1 == doctest::Approx(loss1).epsilon(1e-6));
        const double gap = relative_gap(expected.data(), model.grads(), P);
        CHECK(gap < 2e-5);
        // Without the sum of the copies the model holds shard 0's part only: far from the whole.
        BatchShards unsummed(model, B, T, Precision::fp32, threads);
        unsummed.forward(in0.data(), tg0.data(), random, starts.data());
        unsummed.backward(in0.data(), tg0.data(), random, 0.5, GradWrite::overwrite);
        unsummed.forward(in1.data(), tg1.data(), random, nullptr);
        unsummed.backward(in1.data(), tg1.data(), random, 0.5, GradWrite::accumulate);
        CHECK(relative_gap(expected.data(), model.grads(), P) > 0.05);
      }
}

TEST_CASE("batch shards: a token outside the vocabulary is an Error naming it, not a crash") {
  const ThreadsFor pool(2);
  Config c = test::train_config(AttentionKind::rfa_gate, 16);
  const ModelSpec spec = test::tiny_spec(c);
  Model<float> model(spec);
  model_init(model, 1);
  BatchShards shards(model, 4, spec.model.context_length, Precision::fp32, 2);
  std::vector<int32_t> in = tokens_of(4 * spec.model.context_length, spec.V, 5), tg = in;
  in[40] = spec.V;
  CHECK_THROWS_WITH_AS(shards.forward(in.data(), tg.data(), model.random_fixed(), nullptr),
                       doctest::Contains("token id 16 at position 40 is outside the vocabulary"), Error);
}

TEST_CASE("thread split: auto takes the batch split where it fits; batch is refused where it cannot run") {
  Config c = test::train_config(AttentionKind::rfa_gate, 16);
  c.train.batch_size = 4;
  const ModelSpec spec = test::tiny_spec(c);
  CHECK(thread_split_resolve(c, spec, 2) == ThreadSplit::batch);
  CHECK(thread_split_resolve(c, spec, 4) == ThreadSplit::batch);
  CHECK(thread_split_resolve(c, spec, 1) == ThreadSplit::kernels);
  CHECK(thread_split_resolve(c, spec, 3) == ThreadSplit::kernels);  // B not a multiple of the threads
  Config big = c;  // the copies outweigh the activations: 1 row of 16 tokens, a 64k vocabulary
  big.train.batch_size = 2;
  big.model.vocab_size = 1 << 16;
  big.model.d_model = 256;
  CHECK(thread_split_resolve(big, test::tiny_spec(big), 2) == ThreadSplit::kernels);
  Config stateful = c;
  stateful.train.stateful = true;
  CHECK(thread_split_resolve(stateful, spec, 2) == ThreadSplit::kernels);
  Config dpo = c;
  dpo.data.format = DataFormat::preference;
  CHECK(thread_split_resolve(dpo, spec, 2) == ThreadSplit::kernels);
  Config kernels = c;
  kernels.train.thread_split = ThreadSplit::kernels;
  CHECK(thread_split_resolve(kernels, spec, 2) == ThreadSplit::kernels);

  Config batch = c;
  batch.train.thread_split = ThreadSplit::batch;
  CHECK(thread_split_resolve(batch, spec, 3) == ThreadSplit::batch);  // uneven shards: asked for
  CHECK(thread_split_resolve(batch, spec, 1) == ThreadSplit::kernels);
  CHECK_THROWS_WITH_AS(thread_split_resolve(batch, spec, 8),
                       doctest::Contains("train.batch_size is 4; raise train.batch_size to 8"), Error);
  batch.train.stateful = true;
  CHECK_THROWS_WITH_AS(thread_split_resolve(batch, spec, 2), doctest::Contains("train.stateful"), Error);
  batch.train.stateful = false;
  batch.data.format = DataFormat::preference;
  CHECK_THROWS_WITH_AS(thread_split_resolve(batch, spec, 2), doctest::Contains("preference pairs"), Error);
  batch.data.format = DataFormat::text;
  batch.train.precision = Precision::bf16;  // each thread runs its own bf16 products (kernels/gemm_bf16.h)
  CHECK(thread_split_resolve(batch, spec, 2) == ThreadSplit::batch);
  Config bf16 = c;
  bf16.train.precision = Precision::bf16;
  CHECK(thread_split_resolve(bf16, spec, 2) == ThreadSplit::batch);
}

TEST_CASE("train: a session under the batch split takes the kernel split's steps, and repeats itself") {
  const ThreadsFor pool(2);
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa_gate})
    for (Precision precision : {Precision::fp32, Precision::bf16}) {
      if (precision == Precision::bf16 && !bf16_native()) continue;  // bf16 products need AVX512-BF16
      const std::string name(enum_name(kind)), prec(enum_name(precision));
      CAPTURE(name);
      CAPTURE(prec);
      Config c = test::train_config(kind, 16);
      c.train.precision = precision;  // bf16: both threads' products at once (kernels/gemm_bf16.h)
      c.train.batch_size = 4;
      c.train.grad_accum = 2;
      c.optim.lr = 1e-2;
      const std::vector<uint16_t> tokens = test::random_tokens(4000, 3);
      const TokenSplit split = test::split_of(tokens);
      auto run = [&](ThreadSplit how) {
        Config ci = c;
        ci.train.thread_split = how;
        TrainSession session(ci, model_spec_make(ci.model, ci.attention));
        CHECK(session.thread_split() == how);
        BatchSampler sampler(split, ci.train.batch_size, ci.model.context_length, ci.train.seed);
        std::vector<double> losses;
        for (int64_t s = 0; s < 5; ++s) losses.push_back(session.step(s, sampler).loss);
        return losses;
      };
      const std::vector<double> kernels = run(ThreadSplit::kernels), batch = run(ThreadSplit::batch);
      for (size_t i = 0; i < kernels.size(); ++i) CHECK(batch[i] == doctest::Approx(kernels[i]).epsilon(1e-5));
      CHECK(run(ThreadSplit::batch) == batch);
    }
}
