// `rfa bench train --profile`'s attention rows (train/train_bench.h, core/step_profile.h): the
// bytes each kind's forward and backward move, so that the profile can say whether a kernel below
// the FMA roof is bound by memory instead (docs/cpu-targets.md).
#include <doctest/doctest.h>

#include "attention/attention_core.h"
#include "attention/attention_spec.h"
#include "support/train_fixtures.h"
#include "train/train_bench.h"

using namespace rfa;

TEST_CASE("bench train --profile: the attention rows count the bytes of q, k, v, n, out and the saved tensors") {
  for (AttentionKind kind : {AttentionKind::rfa_gate, AttentionKind::softmax}) {
    CAPTURE(kind);
    Config c = test::train_config(kind, 64);
    c.train.batch_size = 2;
    const TrainBenchResult r = train_bench(c, 2, 1, true);
    REQUIRE(r.profiled);
    REQUIRE(r.timed_steps == 2);
    const ModelConfig& m = c.model;
    const AttentionSpec s = attention_spec_make(c.attention, m.n_heads, m.d_model / m.n_heads);
    const int B = c.train.batch_size, T = m.context_length;
    const double operand = 4.0 * B * T * m.d_model, saved = 4.0 * double(attention_saved_size(s, B, T));
    const int reads_n = attention_reads_n(s) ? 1 : 0;
    CHECK(reads_n == (kind == AttentionKind::rfa_gate ? 1 : 0));
    const ProfileRow& fwd = r.profile[size_t(ProfiledKernel::attention_forward)];
    const ProfileRow& bwd = r.profile[size_t(ProfiledKernel::attention_backward)];
    CHECK(fwd.calls == 2 * m.n_layers);
    CHECK(fwd.bytes / 2 == doctest::Approx(m.n_layers * ((4 + reads_n) * operand + saved)));
    CHECK(bwd.bytes / 2 == doctest::Approx(m.n_layers * ((8 + 2 * reads_n) * operand + saved)));
  }
}
