#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "core/rng.h"
#include "model/model.h"
#include "support/tiny_model.h"

using namespace rfa;

namespace {

ModelSpec spec_of(AttentionKind kind, bool tied) {
  return test::tiny_spec(kind, {.vocab = 65, .context = 16, .d_model = 64, .n_heads = 4, .n_layers = 3,
                                .num_features = 8, .tied = tied});
}

}  // namespace

TEST_CASE("model params: decay mask covers exactly the weight matrices") {
  for (AttentionKind kind : {AttentionKind::softmax, AttentionKind::rfa, AttentionKind::rfa_gate}) {
    for (bool tied : {true, false}) {
      ParamTable t = model_param_table(spec_of(kind, tied));
      std::set<std::string> expected = {"tok_embedding"};
      if (!tied) expected.insert("lm_head");
      for (int l = 0; l < 3; ++l) {
        std::string p = "layers." + std::to_string(l) + ".";
        for (const char* w : {"attn.wq", "attn.wk", "attn.wv", "attn.wo", "ffn.w13", "ffn.w2"}) expected.insert(p + w);
        if (kind == AttentionKind::rfa_gate) expected.insert(p + "attn.gate_w");
        if (kind != AttentionKind::softmax) CHECK(t.find(p + "attn.sigma") != nullptr);
        CHECK((t.find(p + "attn.gate_b") != nullptr) == (kind == AttentionKind::rfa_gate));
      }
      std::set<std::string> decayed;
      for (const auto& e : t.entries())
        if (e.decay) decayed.insert(e.name);
      CHECK(decayed == expected);
      // The flat mask agrees with the table, element by element.
      auto mask = t.decay_mask();
      int64_t ones = 0, expected_ones = 0;
      for (float v : mask) ones += v == 1.0f;
      for (const auto& e : t.entries()) expected_ones += e.decay ? e.numel : 0;
      CHECK(ones == expected_ones);
    }
  }
}

TEST_CASE("model params: shapes and names follow the LLaMA layout") {
  ParamTable t = model_param_table(spec_of(AttentionKind::rfa_gate, false));
  CHECK(t.get("tok_embedding").shape == std::vector<int64_t>{65, 64});
  CHECK(t.get("layers.2.ffn.w13").shape == std::vector<int64_t>{2 * 192, 64});
  CHECK(t.get("layers.2.ffn.w2").shape == std::vector<int64_t>{192, 64});  // input-major (Hf, C)
  CHECK(t.get("layers.0.attn.sigma").shape == std::vector<int64_t>{4, 16});
  CHECK(t.get("layers.0.attn.gate_w").shape == std::vector<int64_t>{4, 64});
  CHECK(t.get("lm_head").shape == std::vector<int64_t>{65, 64});
  for (const auto& e : t.entries()) CHECK(e.offset % 16 == 0);
}

TEST_CASE("model init: statistics follow the recipe and the seed") {
  ModelSpec spec = spec_of(AttentionKind::rfa_gate, true);
  Model<float> a(spec), b(spec), c(spec);
  model_init(a, 1);
  model_init(b, 1);
  model_init(c, 2);
  CHECK(std::equal(a.params(), a.params() + a.param_size(), b.params()));
  CHECK(!std::equal(a.params(), a.params() + a.param_size(), c.params()));
  auto std_of = [&](const char* name) {
    const ParamEntry& e = a.table.get(name);
    double s = 0;
    for (int64_t i = 0; i < e.numel; ++i) s += double(a.params()[e.offset + i]) * a.params()[e.offset + i];
    return std::sqrt(s / e.numel);
  };
  CHECK(std_of("layers.0.ffn.w13") == doctest::Approx(0.02).epsilon(0.05));
  CHECK(std_of("layers.0.attn.wo") == doctest::Approx(0.02 / std::sqrt(6.0)).epsilon(0.08));
  CHECK(a.params()[a.table.get("layers.1.attn_norm").offset] == 1.0f);
  CHECK(a.params()[a.table.get("layers.1.attn.gate_b").offset + 3] == 2.0f);
  CHECK(a.params()[a.table.get("layers.1.attn.sigma").offset + 5] == 1.0f);
  // Fixed random matrices are a pure function of the seed; a training step's draw differs.
  CHECK(std::equal(a.random_fixed(), a.random_fixed() + a.random_size, b.random_fixed()));
  model_draw_random(spec, 1, 0, a.random_step());
  CHECK(!std::equal(a.random_fixed(), a.random_fixed() + a.random_size, a.random_step()));
}

TEST_CASE("model init: a tensor drawn in parts across threads holds one pass's values, at every thread count") {
  // d_model 208, vocab 701: the tied embedding's 145,808 values are three parts of the fill (65,536
  // each, the last one short); smaller tensors are one part each.
  ModelSpec spec = test::tiny_spec(AttentionKind::rfa_gate, {.vocab = 701, .context = 16, .d_model = 208,
                                                             .n_heads = 4, .n_layers = 1, .num_features = 8,
                                                             .tied = true});
  const int before = thread_count();
  std::vector<std::vector<float>> by_threads;
  for (int threads : {1, 2, 3}) {
    thread_count_set(threads);
    Model<float> m(spec);
    model_init(m, 11);
    by_threads.emplace_back(m.params(), m.params() + m.param_size());
  }
  thread_count_set(before);
  CHECK(by_threads[0] == by_threads[1]);
  CHECK(by_threads[0] == by_threads[2]);
  const ParamTable table = model_param_table(spec);  // named: entries() of a temporary would dangle
  const auto& entries = table.entries();
  int64_t checked = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ParamEntry& e = entries[i];
    if (e.init.kind != ParamInit::Kind::normal) continue;
    CAPTURE(e.name);
    CounterRng one_pass(11, 0x1417, i);
    const double std = spec.model.init_std * e.init.value;
    bool same = true;
    for (int64_t j = 0; j < e.numel; ++j) same &= by_threads[1][size_t(e.offset + j)] == float(one_pass.normal() * std);
    CHECK(same);
    checked = std::max(checked, e.numel);
  }
  CHECK(checked > 2 * 65536);  // some tensor was drawn in three parts
}
