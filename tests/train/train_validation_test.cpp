// What the trainer's validation loss covers: the whole split by default, a
// prefix of eval_batches x B x T + 1 tokens when capped, and TrainSession's
// evaluate() over it equals perplexity_evaluate's mean NLL bit for bit.
#include <doctest/doctest.h>

#include <vector>

#include "config/config_enums.h"
#include "core/error.h"
#include "eval/perplexity.h"
#include "support/train_fixtures.h"
#include "train/train_session.h"
#include "train/train_validation.h"

using namespace rfa;

TEST_CASE("validation text: the whole split by default, the first N x B x T + 1 tokens when capped") {
  const std::vector<uint16_t> tokens = test::random_tokens(1000, 2);
  const TokenSplit split = test::split_of(tokens);
  TrainConfig tc;
  tc.batch_size = 3;
  tc.eval_batches = 0;
  ValidationText all = validation_text(split, tc, 16);
  CHECK(all.tokens == split.to_vector());
  CHECK(all.what == "the whole validation split (1000 tokens)");
  tc.eval_batches = 2;
  ValidationText part = validation_text(split, tc, 16);
  REQUIRE(part.tokens.size() == 2 * 3 * 16 + 1);
  for (size_t i = 0; i < part.tokens.size(); ++i) CHECK(part.tokens[i] == tokens[i]);
  CHECK(part.what.find("the first 97 of the 1000 validation tokens (train.eval_batches=2") == 0);
  tc.eval_batches = 100;  // more than the split holds: all of it
  CHECK(validation_text(split, tc, 16).tokens.size() == 1000);
  const std::vector<uint16_t> one = {3};
  CHECK_THROWS_AS(validation_text(test::split_of(one), tc, 16), Error);
}

TEST_CASE("train: evaluate() is `rfa eval perplexity`'s mean NLL, bit for bit, and repeatable") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa, AttentionKind::rfa_gate}) {
    INFO(enum_name(kind));
    Config c = test::train_config(kind, 16);
    c.train.batch_size = 2;
    const std::vector<uint16_t> raw = test::random_tokens(1500, 7);
    const TokenSplit split = test::split_of(raw);
    const std::vector<int32_t> val = split.to_vector();
    TrainSession session(c, model_spec_make(c.model, c.attention));
    BatchSampler sampler(split, c.train.batch_size, c.model.context_length, c.train.seed);
    for (int64_t s = 0; s < 3; ++s) session.step(s, sampler);
    const double got = session.evaluate(val);
    PerplexityOptions o;
    o.progress = false;
    const PerplexityResult want = perplexity_evaluate(session.model(), val, 1500, o);
    CHECK(got == want.mean_nll);
    CHECK(perplexity_method(session.eval_plan(1500)) == want.method);
    session.step(3, sampler);
    const double later = session.evaluate(val);  // the reused decoder reads the new weights
    CHECK(later != got);
    CHECK(later == perplexity_evaluate(session.model(), val, 1500, o).mean_nll);
    CHECK(session.evaluate(val) == later);
  }
}
