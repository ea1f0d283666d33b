// The attention spec is resolved once from the option tree (attention_spec_make);
// the values were validated with the config, which rejects what the cores cannot run.
#include <doctest/doctest.h>

#include "attention/attention_core.h"
#include "attention/attention_spec.h"
#include "config/config_load.h"
#include "core/error.h"

using namespace rfa;

TEST_CASE("attention spec: resolved from the option tree") {
  AttentionConfig a;
  a.kind = AttentionKind::rfa;
  a.feature_map = FeatureMapKind::arccos;
  a.num_features = 48;
  a.chunk_size = 32;
  a.denominator_floor = 0.07;
  AttentionSpec s = attention_spec_make(a, 4, 16);
  CHECK(!s.rfa.gated);
  CHECK(s.rfa.feature_map == FeatureMapKind::arccos);
  CHECK(rfa_feature_count(s.rfa) == 48);
  CHECK(s.rfa.chunk_size == 32);
  CHECK(s.rfa.eps_d == 0.07);
  CHECK(s.D == 48);
  CHECK(!s.rope);  // positions auto: none for the RFA kinds
  CHECK(attention_random_size(s) == 4 * 48 * 16);
  CHECK(attention_params(s).size() == 1);  // sigma
  a.kind = AttentionKind::rfa_gate;
  a.feature_map = FeatureMapKind::gaussian;
  a.positions = PositionKind::rope;
  s = attention_spec_make(a, 4, 16);
  CHECK(s.rfa.gated);
  CHECK(rfa_feature_count(s.rfa) == 96);
  CHECK(s.rope);
  CHECK(attention_params(s).size() == 3);  // sigma, gate_w, gate_b
  CHECK(attention_reads_n(s));
  CHECK(!attention_state_grows(s));
  a.kind = AttentionKind::softmax;
  a.positions = PositionKind::automatic;
  s = attention_spec_make(a, 4, 16);
  CHECK(s.rope);
  CHECK(s.D == 0);
  CHECK(attention_random_size(s) == 0);
  CHECK(attention_params(s).empty());
  CHECK(attention_state_grows(s));
}

TEST_CASE("attention spec: one default for every RFA value, the option tree's") {
  const RfaConfig c;
  const AttentionConfig a;
  CHECK(c.eps_d == a.denominator_floor);
  CHECK(c.eps_n == a.qk_norm_eps);
  CHECK(c.num_features == a.num_features);
  CHECK(c.chunk_size == a.chunk_size);
  CHECK(c.feature_map == a.feature_map);
}

TEST_CASE("attention spec: the config rejects values the cores cannot run") {
  for (const char* bad : {"attention.chunk_size=0", "attention.num_features=0", "attention.denominator_floor=0",
                          "attention.qk_norm_eps=-1"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(config_load("", {bad}), Error);
  }
}
